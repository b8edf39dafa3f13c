"""Who is asking, as ask_rag.py's flags say it: --users, --add-user, --groups, --as,
--trust-proxy-header and --proxy-from, read into args.reader (terminal, --mcp) and args.auth
(--serve). The users file and the keys themselves are rag/store/users.py.

    args = flags.parse_ask(["--users", "users.toml", "--as", "jana", "Wie?"])
    resolve(args)   # args.reader == Reader("jana", ("personal",)); args.auth == Auth(users, …)

Does not handle: reading the users file (rag/store/users.py load), checking a key
(rag/store/users.py identify).
"""
import ipaddress
import os

from rag.store.access import Reader
from rag.store.users import Auth, UsersError, add_user, load


def add_flags(parser):
    """--users, --add-user, --groups, --as, --trust-proxy-header, --proxy-from (ask_rag.py)."""
    parser.add_argument("--users", default=os.environ.get("RAG_USERS"), metavar="FILE",
                        help="Benutzerdatei (TOML) für --serve, --mcp und --as: jeder liest nur "
                             "die Seiten seiner Gruppen (RAG_USERS; docs/rechte.md)")
    parser.add_argument("--add-user", metavar="NAME",
                        help="Benutzer in --users anlegen; druckt seinen Schlüssel einmal")
    parser.add_argument("--groups", default="", help="mit --add-user: Gruppen, durch Komma "
                                                     "getrennt, z. B. personal,leitung")
    parser.add_argument("--as", dest="as_user", metavar="NAME",
                        help="fragen, wie dieser Benutzer aus --users fragen würde (Terminal und "
                             "--mcp)")
    parser.add_argument("--trust-proxy-header", action="store_true",
                        default=os.environ.get("RAG_TRUST_PROXY_HEADER") == "1",
                        help="--serve: Benutzer und Gruppen aus X-Forwarded-User/-Groups bzw. "
                             "Remote-User/-Groups eines Reverse-Proxys nehmen, nur von 127.0.0.1 "
                             "oder --proxy-from (RAG_TRUST_PROXY_HEADER=1)")
    parser.add_argument("--proxy-from", default=os.environ.get("RAG_PROXY_FROM", ""),
                        metavar="ADRESSEN", help="weitere Adressen/Netze des Proxys, durch Komma "
                                                 "getrennt (RAG_PROXY_FROM), z. B. 10.0.0.5")
    parser.set_defaults(reader=None, auth=None)


def resolve(args):
    """args.reader (terminal, --mcp) and args.auth (--serve) from the flags; UsersError (German)
    when wrong."""
    table = load(args.users) if args.users else {}
    proxies = tuple(p.strip() for p in args.proxy_from.split(",") if p.strip())
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise UsersError(f"--proxy-from {proxy} ist keine IP-Adresse und kein Netz – z. B. "
                             f"10.0.0.5 oder 10.0.0.0/24")
    if args.as_user is not None:
        if args.serve:
            raise UsersError("--as gilt für das Terminal und --mcp; --serve erkennt jeden "
                             "Benutzer an seinem Schlüssel")
        if args.as_user not in table:
            raise UsersError(f"Benutzer {args.as_user} steht nicht in der Benutzerdatei – "
                             f"--users FILE angeben oder anlegen mit --add-user {args.as_user} "
                             f"--groups …")
        args.reader = Reader(args.as_user, table[args.as_user].groups)
    args.auth = Auth(table, args.serve_key, args.trust_proxy_header, proxies)


def first(args):
    """--add-user (prints the key once, as the last line), else args.reader/args.auth from --users,
    --as and the proxy flags; True when done. Without any of these flags nothing happens (the reader
    reads everything)."""
    if not (args.add_user or args.users or args.as_user or args.trust_proxy_header):
        return False
    try:
        if args.add_user:
            if not args.users:
                raise UsersError("--add-user braucht --users FILE (die Benutzerdatei)")
            groups = [g.strip() for g in args.groups.split(",") if g.strip()]
            key = add_user(args.users, args.add_user, groups)
            print(f"Benutzer {args.add_user} in {args.users} angelegt. Schlüssel (wird nur jetzt "
                  f"gezeigt):\n{key}")
            return True
        resolve(args)
    except UsersError as exc:
        raise SystemExit(f"Fehler: {exc}")  # one German line on stderr, exit code 1
    return False
