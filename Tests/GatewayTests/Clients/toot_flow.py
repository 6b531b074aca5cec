"""Drives Aviary's Mastodon API with toot, the Mastodon command-line client, as its users type it.

Usage: toot_flow.py GATEWAY_URL ALICE BOB PASSWORD
ALICE and BOB are registered accounts (with PASSWORD and the email NAME@example.com). Alice logs
in with `toot login_cli` (email and password), Bob with `toot login` (the browser flow: the page
is filled in here, and the code pasted back). toot keeps its configuration in a folder of its own.
Exits non-zero, with the reason, at the first surprise.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import requests
from flow import eventually, png, step

BASE, ALICE, BOB, PASSWORD = sys.argv[1:5]
TOOT = os.path.join(os.path.dirname(sys.executable), "toot")
ENV = dict(os.environ, XDG_CONFIG_HOME=tempfile.mkdtemp(prefix="toot-"))


def toot(*arguments, account=None, stdin=None):
    """Runs toot; its output, or the reason it failed."""
    command = [TOOT] + (["--as", account] if account else []) + list(arguments)
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=ENV, timeout=60)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


step("Alice logs in with login_cli")
out = toot("login_cli", "-i", BASE, "-e", f"{ALICE}@example.com", "-p", PASSWORD)
assert "Successfully logged in" in out, out
domain = json.loads(open(os.path.join(ENV["XDG_CONFIG_HOME"], "toot", "config.json")).read())["active_user"].split("@", 1)[1]
alice, bob = f"{ALICE}@{domain}", f"{BOB}@{domain}"
assert ALICE in toot("whoami", account=alice)

step("Bob logs in through the browser flow")
login = subprocess.Popen([TOOT, "login", "-i", BASE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=ENV)
url = None
for line in login.stdout:
    if line.startswith("http"):
        url = line.strip()
        break
assert url, "toot login printed no URL"
page = requests.get(url, timeout=10)
assert page.status_code == 200 and "<form" in page.text, page.text
fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page.text))
fields.update(login=BOB, password=PASSWORD)
answer = requests.post(BASE + "/oauth/authorize", data=fields, timeout=10)
code = re.search(r"<code>([^<]+)</code>", answer.text)
assert code, answer.text
rest, _ = login.communicate(f"n\n{code.group(1)}\n", timeout=60)
assert login.returncode == 0 and "Successfully logged in" in rest, rest

step("Bob follows Alice")
assert "You are now following" in toot("follow", ALICE, account=bob)

step("Alice posts with an image")
image = os.path.join(ENV["XDG_CONFIG_HOME"], "dot.png")
open(image, "wb").write(png(5, 4))
status = json.loads(toot("post", "--json", "-m", image, "-d", "a dot", f"Hello from toot #aviary @{BOB}", account=alice))
assert status["media_attachments"][0]["type"] == "image", status
assert "hashtag" in status["content"], status

step("Bob reads his home timeline, replies and favourites")
eventually("Alice's status in Bob's home", lambda: any(
    s["id"] == status["id"] for s in json.loads(toot("timelines", "home", "--json", account=bob))))
reply = json.loads(toot("post", "--json", "-r", status["id"], f"@{ALICE} hi from toot", account=bob))
assert reply["in_reply_to_id"] == status["id"], reply
toot("favourite", status["id"], account=bob)
thread = toot("thread", status["id"], account=alice)
assert "hi from toot" in thread, thread

step("Alice reads her notifications; Bob searches")
notified = eventually("Bob's favourite among Alice's notifications", lambda: [
    n for n in json.loads(toot("notifications", "--json", account=alice)) if n["type"] == "favourite"])
assert notified[0]["account"]["username"] == BOB, notified
found = json.loads(toot("search", "--json", "-t", "accounts", ALICE, account=bob))
assert found["accounts"][0]["username"] == ALICE, found  # whom Bob follows comes first

step("Bob pages his home timeline with --max-id")
newest = json.loads(toot("timelines", "home", "--json", "-l", "1", account=bob))
older = json.loads(toot("timelines", "home", "--json", "-l", "1", "--max-id", newest[0]["id"], account=bob))
assert older and int(older[0]["id"]) < int(newest[0]["id"]), (newest, older)

step("Bob deletes his reply")
assert "Status deleted" in toot("delete", reply["id"], account=bob)
print("ok", flush=True)
