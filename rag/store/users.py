"""Who is asking: the users file of --serve and --mcp (--users FILE, RAG_USERS), keys, and a reverse
proxy's headers.

    [users.jana]                                  # users.toml, read with tomllib
    groups = ["personal"]
    key = "scrypt$16384$8$1$5f0c…$9a1e…"
    # only the salted, slow hash of the key (hashlib.scrypt)

    identify({"Authorization": "Bearer <Janas Schlüssel>"}, "127.0.0.1", auth)
    -> Reader("jana", ("personal",))
    identify({"Authorization": "Bearer falsch"}, "127.0.0.1", auth)           -> None (401)

A key is checked against every entry (hmac.compare_digest each time, no early exit), so the time a
wrong key takes does not depend on which user it was tried for. --serve-key stays one user who reads
everything. With --trust-proxy-header the user and groups come from X-Forwarded-User /
X-Forwarded-Groups (oauth2-proxy, nginx) or Remote-User / Remote-Groups (Authelia), and only from a
loopback peer or a --proxy-from address.

Does not handle: expiring keys, changing a key (delete the table, --add-user again), LDAP itself
(the proxy does).
"""
import base64
import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import tomllib
from collections import namedtuple

from rag.store.access import EVERYTHING, GROUP, Reader

SCRYPT = (2 ** 14, 8, 1)  # n, r, p: ~16 MiB and ~50 ms per check on one core; stored with each hash
NAME = re.compile(r"[A-Za-z0-9_-]+")  # a user name (a bare TOML key)
USER_HEADERS = ("X-Forwarded-User", "Remote-User")
GROUP_HEADERS = ("X-Forwarded-Groups", "Remote-Groups")

User = namedtuple("User", "groups key")
Auth = namedtuple("Auth", "users serve_key trust_proxy proxies", defaults=({}, None, False, ()))


class UsersError(Exception):
    """The users file cannot be used; German, names file and line."""


def hash_key(key, salt=None, cost=SCRYPT):
    """The stored form of a key. Example: hash_key("k", bytes(16)) -> "scrypt$16384$8$1$0000…$…" """
    salt = os.urandom(16) if salt is None else salt
    n, r, p = cost
    digest = hashlib.scrypt(key.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                            maxmem=64 * 1024 * 1024, dklen=32)
    return f"scrypt${n}${r}${p}${salt.hex()}${digest.hex()}"


def key_matches(given, stored):
    """Does the key hash to the stored form? Always does the whole work (no early exit on a wrong
    key)."""
    _, n, r, p, salt, digest = stored.split("$")
    again = hash_key(given, bytes.fromhex(salt), (int(n), int(r), int(p))).rpartition("$")[2]
    return hmac.compare_digest(again, digest)


def line_of(text, name):
    """The line of [users.NAME] in the file, for messages.

    Example: "\\n[users.jana]" , "jana" -> 2
    """
    found = re.search(rf"^[ \t]*\[[ \t]*users\.{re.escape(name)}[ \t]*\]", text, re.M)
    return text[:found.start()].count("\n") + 1 if found else 1


def load(path):
    """{name: User} from the users file; UsersError (file and line) when it is malformed."""
    try:
        text = open(path, encoding="utf-8").read()
        data = tomllib.loads(text)
    except OSError as exc:
        raise UsersError(f"Benutzerdatei {path} nicht lesbar ({exc.strerror}) – Pfad mit "
                         f"--users/RAG_USERS prüfen")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        at = re.search(r"\(at line (\d+)", str(exc))
        line = at.group(1) if at else (text.count("\n") + 1
                                       if isinstance(exc, tomllib.TOMLDecodeError) else 1)
        reason = re.sub(r"\s*\(at [^)]*\)", "", str(exc))
        raise UsersError(f"Benutzerdatei {path}, Zeile {line}: kein gültiges TOML ({reason}) – "
                         f"die Zeile korrigieren")
    users = data.get("users", {})
    if not isinstance(users, dict) or set(data) - {"users"}:
        raise UsersError(f"Benutzerdatei {path}, Zeile 1: nur Tabellen [users.NAME] erlaubt")
    out = {}
    for name, entry in users.items():
        where = f"Benutzerdatei {path}, Zeile {line_of(text, name)}"
        groups, key = ((entry.get("groups"), entry.get("key")) if isinstance(entry, dict)
                       else (None, None))
        if not NAME.fullmatch(name) or not isinstance(groups, list) or not all(
                isinstance(g, str) and GROUP.fullmatch(g) for g in groups):
            raise UsersError(f"{where}: [users.{name}] braucht groups = [\"gruppe\", …] "
                             f"(Gruppennamen aus Buchstaben, Ziffern, _ . -)")
        if not isinstance(key, str) or not re.fullmatch(r"scrypt\$\d+\$\d+\$\d+\$"
                                                        r"[0-9a-f]+\$[0-9a-f]{64}", key):
            raise UsersError(f"{where}: [users.{name}] braucht key = \"scrypt$…\" – Benutzer "
                             f"anlegen mit: python3 ask_rag.py --users {path} --add-user {name} "
                             f"--groups a,b")
        out[name] = User(tuple(sorted(set(groups))), key)
    return out


def add_user(path, name, groups):
    """Append a user with a new random key to the file (created 0600); returns the key (shown
    once)."""
    wrong = [g for g in groups if not GROUP.fullmatch(g)]
    if not NAME.fullmatch(name or "") or wrong or not groups:
        raise UsersError(f"--add-user {name} --groups {','.join(groups)}: Name aus Buchstaben, "
                         f"Ziffern, _ -, mindestens eine Gruppe aus Buchstaben, Ziffern, _ . -")
    if os.path.exists(path) and name in load(path):
        raise UsersError(f"Benutzer {name} steht schon in {path} – seine Tabelle [users.{name}] "
                         f"löschen, dann neu anlegen")
    key = secrets.token_urlsafe(32)
    listed = ", ".join(f'"{g}"' for g in sorted(set(groups)))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        out.write(f'\n[users.{name}]\ngroups = [{listed}]\nkey = "{hash_key(key)}"\n')
    return key


def given_key(header):
    """The key of an Authorization header: Bearer KEY, or Basic with KEY as password; "" when none.

    Example: given_key("Bearer geheim") -> "geheim"; given_key("Basic OmdlaGVpbQ==") -> "geheim"
    """
    scheme, _, value = (header or "").partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        try:
            return base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")[2]
        except (ValueError, UnicodeDecodeError):
            return ""
    return ""


def key_ok(header, key):
    """Does the Authorization header carry the key?

    Example: key_ok("Bearer geheim", "geheim") -> True
    """
    return not key or hmac.compare_digest(given_key(header).encode("utf-8"), key.encode("utf-8"))


def from_proxy(peer, auth):
    """May this peer set the user headers? Only with --trust-proxy-header, from loopback or
    --proxy-from."""
    if not auth.trust_proxy:
        return False
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return address.is_loopback or any(address in ipaddress.ip_network(p, strict=False)
                                      for p in auth.proxies)


def identify(headers, peer, auth):
    """The Reader of one request, or None (401). No key configured at all: one who reads
    everything."""
    if from_proxy(peer, auth):
        name = next((headers.get(h) for h in USER_HEADERS if headers.get(h)), None)
        if name:
            raw = next((headers.get(h) for h in GROUP_HEADERS if headers.get(h)), "")
            groups = {g.strip() for g in re.split(r"[,;\s]+", raw) if g.strip()}
            groups |= set(auth.users.get(name.strip(), User((), "")).groups)
            return Reader(name.strip(), tuple(sorted(groups)))
    if not (auth.serve_key or auth.users or auth.trust_proxy):
        return EVERYTHING
    given, found = given_key(headers.get("Authorization")), None
    if auth.serve_key and hmac.compare_digest(given.encode("utf-8"),
                                              auth.serve_key.encode("utf-8")):
        found = EVERYTHING
    # every entry, every time: the time says nothing about who
    for name, user in sorted(auth.users.items()):
        if key_matches(given, user.key) and found is None:
            found = Reader(name, user.groups)
    return found
