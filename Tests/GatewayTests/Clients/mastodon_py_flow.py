"""Drives Aviary's Mastodon API with Mastodon.py as an app would, asserting as it goes.

The test stack speaks plain HTTP, so sign-ins pass allow_http=True (Mastodon.py otherwise
insists on https for OAuth).

Usage: mastodon_py_flow.py GATEWAY_URL ALICE BOB PASSWORD
ALICE and BOB are registered accounts (with PASSWORD). Alice signs in with the password grant,
Bob through the authorization-code flow (the sign-in page, as a person fills it in).
Exits non-zero, with the reason, at the first surprise.
"""
import base64
import http.server
import json
import re
import sys
import threading
import time

import http_ece
import requests
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils
from flow import eventually, png, step
from mastodon import Mastodon, MastodonAPIError, MastodonNotFoundError, StreamListener

BASE, ALICE, BOB, PASSWORD = sys.argv[1:5]
SCOPES = ["read", "write", "follow", "push"]


step("register the app")
client_id, client_secret = Mastodon.create_app(
    "mastodon-py-flow", api_base_url=BASE, scopes=SCOPES, redirect_uris="urn:ietf:wg:oauth:2.0:oob")

step("Alice signs in with her password")
alice = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE)
alice.log_in(username=ALICE, password=PASSWORD, scopes=SCOPES, allow_http=True)
me = alice.account_verify_credentials()
assert me.username == ALICE, me
assert me.source.note is not None, me

step("Alice sets her display name and avatar")
updated = alice.account_update_credentials(display_name="Alice A.", avatar=png(8, 8), avatar_mime_type="image/png")
assert updated.display_name == "Alice A." and not updated.avatar.endswith("missing.png"), updated

step("Bob signs in through the authorization page")
bob = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE)
url = bob.auth_request_url(scopes=SCOPES, redirect_uris="urn:ietf:wg:oauth:2.0:oob", allow_http=True)
page = requests.get(url, timeout=10)
assert page.status_code == 200 and "<form" in page.text, page.text
fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page.text))
fields.update(login=BOB, password=PASSWORD)
answer = requests.post(BASE + "/oauth/authorize", data=fields, timeout=10, allow_redirects=False)
code = re.search(r"<code>([^<]+)</code>", answer.text)
assert code, answer.text
bob.log_in(code=code.group(1), redirect_uri="urn:ietf:wg:oauth:2.0:oob", scopes=SCOPES, allow_http=True)
bob_me = bob.account_verify_credentials()
assert bob_me.username == BOB, bob_me

step("Bob follows Alice")
alice_account = bob.account_lookup(ALICE)
relationship = bob.account_follow(alice_account.id)
assert relationship.following, relationship
assert bob.account_relationships([alice_account.id])[0].following

step("Alice posts with an image")
media = alice.media_post(png(4, 3), mime_type="image/png", file_name="dot.png")
assert media.type == "image", media
first = alice.status_post(f"Hello #aviary from @{BOB}", media_ids=[media.id])
assert f'href="{BASE}/tags/aviary"' in first.content, first.content
assert "mention" in first.content and first.mentions[0].username == BOB, first
assert len(first.media_attachments) == 1, first

step("Bob reads his home timeline")
home = eventually("Alice's status in Bob's home", lambda: [s for s in bob.timeline_home() if s.id == first.id])
assert home[0].account.username == ALICE

step("Bob replies and favourites")
reply = bob.status_reply(first, "Hi Alice")
assert reply.in_reply_to_id == first.id, reply
favourited = bob.status_favourite(first)
assert favourited.favourited and favourited.favourites_count == 1, favourited
context = alice.status_context(first)
assert [s.id for s in context.descendants] == [reply.id], context

step("Bob reblogs")
reblogged = bob.status_reblog(first)
assert reblogged.account.username == BOB and reblogged.reblog.id == first.id, reblogged
assert reblogged.reblog.reblogged and reblogged.reblog.reblogs_count == 1, reblogged
assert [a.username for a in alice.status_reblogged_by(first)] == [BOB]

step("Alice reads her notifications")
notified = eventually(
    "Bob's follow, favourite, reblog and reply among Alice's notifications",
    lambda: {n.type for n in alice.notifications()} >= {"follow", "favourite", "reblog", "mention"} and alice.notifications())
assert all(n.account.username == BOB for n in notified), notified
assert [n.type for n in alice.notifications(types=["favourite"])] == ["favourite"]
unreblogged = bob.status_unreblog(first)
assert not unreblogged.reblogged and unreblogged.reblogs_count == 0 and unreblogged.id == first.id, unreblogged

step("Bob searches")
found = bob.search(ALICE, result_type="accounts")
assert found.accounts[0].username == ALICE, found  # whom Bob follows comes first
found = bob.search("#aviary", result_type="hashtags")
assert found.hashtags[0].name == "aviary", found

step("Bob pages his home timeline with max_id")
posted = [alice.status_post(f"Number {n}") for n in range(5)]
eventually("the five statuses in Bob's home", lambda: bob.timeline_home(limit=1)[0].id == posted[-1].id)
page1 = bob.timeline_home(limit=3)
page2 = bob.fetch_next(page1)
ids = [s.id for s in page1] + [s.id for s in page2]
assert len(page1) == 3 and len(page2) == 3, ids
assert ids == sorted(ids, reverse=True) and len(set(ids)) == 6, ids
older = bob.timeline_home(max_id=page1[-1].id, limit=3)
assert [s.id for s in older] == [s.id for s in page2], (older, page2)

step("Bob keeps his place in the home timeline")
bob.markers_set(["home"], [posted[-1].id])
assert bob.markers_get(["home"])["home"].last_read_id == posted[-1].id

step("Bob reads the local and public timelines")
# The suite's other tests post meanwhile, hundreds a second while one of them loads the gateways:
# page from just above the newest of the five down to Bob's reply, made before them (from a
# streaming replica on the clustered topology, up to its window behind).
newest_first = [s.id for s in reversed(posted)]


def local_timeline_down_to_the_reply():
    ids, max_id = [], str(int(posted[-1].id) + 1)
    while True:
        page = bob.timeline_local(max_id=max_id, since_id=str(int(reply.id) - 1), limit=40)
        ids += [s.id for s in page]
        if not page or int(page[-1].id) <= int(reply.id):
            return ids
        max_id = page[-1].id


local = eventually("the five statuses on the local timeline, newest first", lambda: (lambda ids: ids if [
    i for i in ids if i in newest_first] == newest_first else None)(local_timeline_down_to_the_reply()))
assert reply.id not in local, "a reply to someone else is not on the public timeline"
with_media = [s.id for s in bob.timeline_public(only_media=True, max_id=str(int(first.id) + 1), limit=40)]
assert with_media[:1] == [first.id] and posted[-1].id not in with_media, with_media

step("Bob streams his home timeline and notifications over the WebSocket")


class Collected(StreamListener):
    def __init__(self):
        super().__init__()
        self.updates = []
        self.notifications = []

    def on_update(self, status):
        self.updates.append(status)

    def on_notification(self, notification):
        self.notifications.append(notification)


def hears(listener, status, fan):
    """Waits for `status` and for `fan`'s favourite to arrive on `listener`'s stream."""
    eventually("the status on the stream", lambda: any(s.id == status.id for s in listener.updates))
    eventually(f"{fan}'s favourite on the stream", lambda: any(
        n.type == "favourite" and n.account.username == fan for n in listener.notifications))


listener = Collected()
socket = bob.stream_open_websocket(listener=listener)
bob.stream_user(listener, websocket_handle=socket)
time.sleep(1)  # the stream's first read of the home timeline, which it sends nothing of
streamed = alice.status_post("Live from Alice")
alice.status_favourite(reply)
hears(listener, streamed, ALICE)
socket.close()

step("Alice streams hers over HTTP (server-sent events)")
heard = Collected()
stream = alice.stream_user(heard, run_async=True)
time.sleep(1)
own = alice.status_post("Heard on my own stream")
bob.status_favourite(own)
hears(heard, own, BOB)
stream.close()

step("Bob streams the local timeline over HTTP")
local_stream = Collected()
stream = bob.stream_local(local_stream, run_async=True)
time.sleep(1)
shared = alice.status_post("For everyone on this server")
eventually("Alice's status on the local stream", lambda: any(s.id == shared.id for s in local_stream.updates))
stream.close()

step("Bob keeps a list of Alice and reads it as a timeline and a stream")
friends = bob.list_create("Friends")
bob.list_accounts_add(friends, [alice_account.id])
assert [a.id for a in bob.list_accounts(friends)] == [alice_account.id]
assert [entry.id for entry in bob.account_lists(alice_account.id)] == [friends.id]
list_stream = Collected()
stream = bob.stream_list(friends.id, list_stream, run_async=True)
time.sleep(1)
listed = alice.status_post("Seen on Bob's list")
eventually("Alice's status on the list stream", lambda: any(s.id == listed.id for s in list_stream.updates))
stream.close()
assert listed.id in [s.id for s in bob.timeline_list(friends)]
renamed = bob.list_update(friends, "Close friends", replies_policy="none")
assert renamed.title == "Close friends" and renamed.replies_policy == "none", renamed
bob.list_delete(friends)
assert bob.lists() == []

step("Alice pins a status on her profile")
pinned = alice.status_pin(posted[1])
assert pinned.pinned and pinned.id == posted[1].id, pinned
assert [s.id for s in bob.account_statuses(me.id, pinned=True)] == [posted[1].id]
alice.status_unpin(posted[1])
assert bob.account_statuses(me.id, pinned=True) == []

step("Bob reports one of Alice's statuses")
report = bob.report(alice_account.id, status_ids=[posted[0].id], comment="numbers everywhere", category="spam")
assert report.category == "spam" and report.status_ids == [posted[0].id], report
assert report.target_account.username == ALICE and not report.action_taken, report

step("Bob subscribes to Web Push as Mastodon.py does (legacy aesgcm) and hears Alice's favourite")
received = []


class Receiver(http.server.BaseHTTPRequestHandler):
    """A push service: keeps what is POSTed, answers 201."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        received.append((self.path, self.headers, body))
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args):
        pass


receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=receiver.serve_forever, daemon=True).start()
push_origin = f"http://127.0.0.1:{receiver.server_address[1]}"


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def vapid_claims(jwt, server_key):
    """Checks the JWT's ES256 signature with the server's key; its claims."""
    head, claims, signature = jwt.split(".")
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url_decode(server_key))
    raw = b64url_decode(signature)
    der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    key.verify(der, f"{head}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    return json.loads(b64url_decode(claims))


def pushed(path):
    return eventually(f"a push at {path}", lambda: next((p for p in received if p[0] == path), None))


private, public = bob.push_subscription_generate_keys()
subscription = bob.push_subscription_set(push_origin + "/legacy", public, favourite_events=True, mention_events=True)
assert subscription.alerts.favourite and subscription.alerts.mention and not subscription.alerts.follow, subscription
assert bob.push_subscription().endpoint == push_origin + "/legacy"
assert bob.instance_v2().configuration.vapid.public_key == subscription.server_key
pushable = bob.status_post("Push me")
alice.status_favourite(pushable)
path, headers, body = pushed("/legacy")
assert headers["Content-Encoding"] == "aesgcm" and headers["Authorization"].startswith("WebPush "), dict(headers)
message = bob.push_subscription_decrypt_push(body, private, headers["Encryption"], headers["Crypto-Key"])
assert message.notification_type == "favourite" and message.access_token == bob.access_token, message
assert "Alice A." in message.title and message.body == "Push me", message
assert vapid_claims(headers["Authorization"].split(" ", 1)[1], subscription.server_key)["aud"] == push_origin

step("Bob subscribes again with standard (RFC 8291's aes128gcm, RFC 8292's vapid)")
private, public = bob.push_subscription_generate_keys()
standard = requests.post(BASE + "/api/v1/push/subscription", headers={"Authorization": f"Bearer {bob.access_token}"}, data={
    "subscription[endpoint]": push_origin + "/standard", "subscription[standard]": "true",
    "subscription[keys][p256dh]": base64.urlsafe_b64encode(public["pubkey"]).decode().rstrip("="),
    "subscription[keys][auth]": base64.urlsafe_b64encode(public["auth"]).decode().rstrip("="),
    "data[alerts][favourite]": "true"}, timeout=10)
assert standard.status_code == 200 and standard.json()["standard"] is True, standard.text
liked = bob.status_post("Like this one")
alice.status_favourite(liked)
path, headers, body = pushed("/standard")
assert headers["Content-Encoding"] == "aes128gcm", dict(headers)
plain = http_ece.decrypt(body, private_key=ec.derive_private_key(private["privkey"], ec.SECP256R1()), auth_secret=private["auth"],
                         version="aes128gcm")
assert json.loads(plain)["notification_type"] == "favourite", plain
token, key = re.fullmatch(r"vapid t=([^,]+), k=(\S+)", headers["Authorization"]).groups()
assert key == standard.json()["server_key"] and vapid_claims(token, key)["aud"] == push_origin
bob.push_subscription_delete()
try:
    bob.push_subscription()
    raise AssertionError("a deleted push subscription was still there")
except MastodonNotFoundError:
    pass
receiver.shutdown()

step("Bob deletes his reply")
deleted = bob.status_delete(reply)
assert deleted.text == f"@{ALICE} Hi Alice", deleted
try:
    alice.status(reply.id)
    raise AssertionError("a deleted status was still there")
except MastodonNotFoundError:
    pass

step("a token without write is refused")
reader = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE)
reader.log_in(username=ALICE, password=PASSWORD, scopes=["read"], allow_http=True)
try:
    reader.status_post("not allowed")
    raise AssertionError("a read-only token posted")
except MastodonAPIError as error:
    assert "outside the authorized scopes" in str(error), error

print("ok", flush=True)
