"""What the client scripts share: their steps' log, waiting for what fan-out delivers later,
and a small image to upload."""
import struct
import time
import zlib


def step(text):
    print(f"- {text}", flush=True)


def eventually(what, check, seconds=15):
    """The first true value `check` returns, asked again until `seconds` have passed."""
    deadline = time.time() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"{what}: not within {seconds} s")
        time.sleep(0.2)


def png(width, height):
    """A small valid PNG, which the media service accepts."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\xff\x80\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
