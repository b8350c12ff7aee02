"""RSMQ targets: ``redis://``, ``rediss://`` (TLS) and ``unix://`` URLs -> connection settings.

``redis://[user[:password]@]host[:port][/db][?ns=NAME]`` (namespace default ``rsmq``),
``rediss://...`` (TLS, the server certificate verified; CA from ``?ca=PATH``, ``--ca PATH`` or
$QCONSOLE_REDIS_CA; ``--insecure`` / $QCONSOLE_REDIS_INSECURE=1 skips verification, said on
stderr), ``unix:///path/redis.sock[?db=N&ns=NAME]``. The password may also come from
$REDISCLI_AUTH (as redis-cli takes it) or ``?password_file=PATH``, so it need not sit in argv.

Nothing here imports redis; :func:`connect` does, lazily. :attr:`Target.shown` is the form every
output uses: the password is never part of it.
"""

from __future__ import annotations

import os
import sys
from urllib.parse import parse_qs, quote, unquote, urlsplit

from ...errors import RootError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMES = ("redis", "rediss", "unix")
DEFAULT_NS = "rsmq"
DEFAULT_PORT = 6379
#: seconds: an unreachable server or a stuck login is one line within a few seconds
CONNECT_TIMEOUT_S = 3.0
#: seconds one command may take to answer (our commands are small; this only bounds a hang)
SOCKET_TIMEOUT_S = 5.0
KNOWN_PARAMS = ("ns", "ca", "db", "password_file", "cert", "key", "insecure")


def is_target(text: object) -> bool:
    """True when ``text`` names a Redis target rather than a directory."""
    if not isinstance(text, str):
        return False
    return text.partition("://")[0].lower() in SCHEMES and "://" in text


class Target:
    """A parsed target: how to connect (``kwargs`` for redis-py) and how to show it."""

    def __init__(self, scheme: str, kwargs: dict[str, Any], ns: str, shown: str, secret: str | None) -> None:
        self.scheme = scheme
        self.kwargs = kwargs
        self.ns = ns
        self.shown = shown
        #: the password (only to scrub it out of error texts); never shown
        self.secret = secret

    def scrub(self, text: str) -> str:
        """``text`` without the password in it (error messages of the client library)."""
        if self.secret:
            text = text.replace(self.secret, "***")
            quoted = quote(self.secret, safe="")
            if quoted != self.secret:
                text = text.replace(quoted, "***")
        return text


def _one(params: dict[str, list[str]], name: str) -> str | None:
    values = params.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise RootError(f"redis target: ?{name}= given {len(values)} times")
    return values[0]


def _read_password_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as err:
        raise RootError(f"password file {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise RootError(f"password file {path}: not UTF-8 text") from None
    return text.rstrip("\r\n")


def parse(text: str, *, environ: dict[str, str] | None = None) -> Target:
    """A :class:`Target` from the URL an operator typed, or RootError (one line, no password)."""
    env = os.environ if environ is None else environ
    unreadable = ("bad redis target: cannot read user, password, host and port from it (%-encode a / ? # @ "
                  "or % in the user or password: %2F %3F %23 %40 %25)")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        # never echo urlsplit's error: it quotes the netloc, where the password is
        raise RootError(unreadable) from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise RootError(f"bad redis target: scheme must be redis://, rediss:// or unix://, not {scheme}://")
    if scheme != "unix" and "@" in text.partition("://")[2][len(parts.netloc):]:
        # an unencoded / ? or # in the password ends the host part early: the rest of the
        # password would be read as a port, path or query (and shown), or the host as a fragment
        raise RootError(unreadable)
    try:
        # strict: decoded with replacement, ?ns=%ff was namespace U+FFFD, another one than named
        params = parse_qs(parts.query, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise RootError("redis target: a %-encoded ?name= value is not UTF-8 text (rsmq namespaces are text)") from None
    unknown = sorted(set(params) - set(KNOWN_PARAMS))
    if unknown:
        raise RootError(f"redis target: unknown parameter ?{unknown[0]}= (known: {', '.join(KNOWN_PARAMS)})")
    ns = _one(params, "ns")
    ns = DEFAULT_NS if ns is None else ns
    if not ns or any(c in ns for c in "\r\n\0 ") or not ns.isprintable():
        raise RootError("redis target: ?ns= must be a non-empty name without spaces or control characters")
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    pw_file = _one(params, "password_file")
    if password is not None and pw_file:
        raise RootError("redis target: give the password in the URL or ?password_file=, not both")
    if pw_file:
        password = _read_password_file(pw_file)
    if password is None and env.get("REDISCLI_AUTH"):
        password = env["REDISCLI_AUTH"]
    # redis-cli (and Redis's one-argument AUTH) read redis://NAME@host as the password: so does
    # this, unless a password comes by ?password_file= or $REDISCLI_AUTH (then NAME is the ACL
    # user). NAME is shown only beside ?password_file= in the same URL: with $REDISCLI_AUTH it
    # may be redis-cli's form typed out of habit (redis-cli then ignores the variable)
    show_user = parts.password is not None or bool(pw_file)
    if user and password is None:
        user, password = None, user
    kwargs: dict[str, Any] = {
        "socket_connect_timeout": CONNECT_TIMEOUT_S,
        "socket_timeout": SOCKET_TIMEOUT_S,
        "protocol": 2,  # servers without HELLO (Redis < 6, some proxies) answer too
    }
    if user:
        kwargs["username"] = user
    if password is not None:
        kwargs["password"] = password
    db_text = _one(params, "db")
    if scheme == "unix":
        if parts.netloc and parts.netloc.rpartition("@")[2]:
            raise RootError("redis target: unix:// takes a path (unix:///path/redis.sock), not a host")
        if not parts.path:
            raise RootError("redis target: unix:// needs the socket's path, e.g. unix:///run/redis.sock")
        kwargs["unix_socket_path"] = parts.path
        where = parts.path
    else:
        host = parts.hostname
        if not host:
            raise RootError(f"redis target: {scheme}:// needs a host, e.g. {scheme}://localhost:6379")
        kwargs["host"] = host
        kwargs["port"] = port or DEFAULT_PORT
        path = parts.path.strip("/")
        if path:
            if db_text is not None:
                raise RootError("redis target: give the database as /N or ?db=N, not both")
            db_text = path
        shown_host = f"[{host}]" if ":" in host else host
        where = f"{shown_host}:{kwargs['port']}"
    if db_text is not None:
        if not (db_text.isascii() and db_text.isdigit()):
            raise RootError(f"redis target: the database must be a number, not {db_text!r}")
        kwargs["db"] = int(db_text)
    if scheme == "rediss":
        kwargs.update(_tls_kwargs(params, env))
    elif any(_one(params, k) for k in ("ca", "cert", "key")):
        raise RootError(f"redis target: ?ca=/?cert=/?key= need rediss:// (TLS), not {scheme}://")
    login = f"{quote(user, safe='')}@" if user and show_user else ""
    query = [f"ns={quote(ns, safe='')}"] if ns != DEFAULT_NS else []
    db = kwargs.get("db")
    if scheme == "unix":
        if db:
            query.insert(0, f"db={db}")
        shown = f"unix://{login}{where}"
    else:
        shown = f"{scheme}://{login}{where}" + (f"/{db}" if db else "")
    shown += ("?" + "&".join(query)) if query else ""
    return Target(scheme, kwargs, ns, shown, password or None)


def _tls_kwargs(params: dict[str, list[str]], env: dict[str, str]) -> dict[str, Any]:
    insecure = env.get("QCONSOLE_REDIS_INSECURE", "") not in ("", "0") or _one(params, "insecure") in ("1", "true", "yes")
    out: dict[str, Any] = {"ssl": True}
    ca = _one(params, "ca") or env.get("QCONSOLE_REDIS_CA") or None
    if insecure:
        sys.stderr.write("qconsole: WARNING: --insecure: the Redis server's TLS certificate is NOT verified; "
                         "anyone on the path can read the password and the messages\n")
        out["ssl_cert_reqs"] = "none"
        out["ssl_check_hostname"] = False
    else:
        out["ssl_cert_reqs"] = "required"
        out["ssl_check_hostname"] = True
        if ca:
            if not os.path.isfile(ca):
                raise RootError(f"redis target: CA file {ca} does not exist")
            out["ssl_ca_certs"] = ca
    cert, key = _one(params, "cert"), _one(params, "key")
    if cert:
        out["ssl_certfile"] = cert
        if key:
            out["ssl_keyfile"] = key
    return out


def connect(target: Target, *, check: bool = True) -> Any:
    """A connected ``redis.Redis`` (PING answered), or RootError with one line that names the
    target (without its password) and why: unreachable, login refused, no such database, TLS.
    ``check=False``: no PING; the client connects on its first command (a console that shows an
    unreachable server beside other roots, and its queues once it answers)."""
    try:
        import redis
    except ImportError:
        raise RootError("RSMQ targets need redis-py: pip install 'qconsole[rsmq]'") from None

    from redis.backoff import NoBackoff
    from redis.retry import Retry

    from .bounded import bounded_class

    # no retries: an unreachable server is one line within the timeouts, not after minutes
    client = redis.Redis(retry=Retry(NoBackoff(), 0), **target.kwargs)
    # every connection of this client holds each reply to a deadline and size bounds (bounded.py):
    # a peer that trickles bytes or sends an endless line is one line, not a hang
    pool = client.connection_pool
    pool.connection_class = bounded_class(pool.connection_class)
    if not check:
        return client
    try:
        client.ping()
    except Exception as err:  # noqa: BLE001 (every failure to connect is one line, exit 2)
        client.close()
        raise RootError(target.scrub(f"{target.shown}: {describe_error(err)}")) from None
    return client


def describe_error(err: BaseException) -> str:
    """One line for a redis-py error (connection, login, database, TLS)."""
    import redis.exceptions as rx

    text = str(err).strip().splitlines()[0] if str(err).strip() else err.__class__.__name__
    low = text.lower()
    from .bounded import ReplyRefused, ReplyTimeout

    if isinstance(err, (ReplyRefused, ReplyTimeout)):
        return text  # a bound of bounded.py: says which, and its own deadline
    if isinstance(err, rx.AuthenticationError) or "wrongpass" in low or "invalid password" in low \
            or "invalid username-password" in low:
        return "login refused (wrong user or password)"
    if isinstance(err, rx.AuthenticationWrongNumberOfArgsError):
        return "login refused: the server has no user accounts (give only a password)"
    if "noauth" in low or "authentication required" in low:
        return "login required: give a password (in the URL, ?password_file= or $REDISCLI_AUTH)"
    if "db index is out of range" in low or "invalid db index" in low or "invalid database" in low:
        return "no such database number on this server"
    if not isinstance(err, rx.ResponseError) and ("certificate" in low or "ssl" in low or "tls" in low):
        # (a server's error reply may name a key or queue holding these letters: not TLS)
        return f"TLS failed: {text} (give the CA with ?ca=PATH or --ca PATH; --insecure skips the check)"
    if isinstance(err, rx.ResponseError) and text.startswith(("WRONGTYPE", "Command # ")) and "WRONGTYPE" in text:
        # redis-py's 'Command # 2 (ZCARD rsmq:q) of pipeline caused error: WRONGTYPE ...', or a
        # script's '... script: <sha1>, on @user_script:48.': say which key where it is known
        import re

        named = re.match(r"Command # \d+ \(\S+ (\S+)[^)]*\) of pipeline", text)
        key = named.group(1) if named else "a key of this queue"
        return f"{key} is not of the type rsmq writes (WRONGTYPE: planted, or another program's); left alone"
    if isinstance(err, rx.TimeoutError):
        if "connecting" in low:
            return f"no answer within {CONNECT_TIMEOUT_S:g} s (is the server up, and is this its port?)"
        return f"no answer within {SOCKET_TIMEOUT_S:g} s (is the server up, and is this its port?)"
    if isinstance(err, rx.ConnectionError):
        return f"cannot connect: {text}"
    if isinstance(err, rx.NoPermissionError) or "noperm" in low or "no permissions" in low:
        return f"permission denied by the server's ACL: {text} (--read-only refuses changes up front)"
    return text


def hide_in_process_title(secret: str | None) -> bool:
    """Overwrite ``secret`` (as typed, or %-encoded) with ``*`` in this process's original argv
    memory, so ``ps`` and /proc/PID/cmdline stop showing a password given in the URL (Linux).

    The kernel shows the argv area as it is now; rewriting it through /proc/self/mem is what
    setproctitle-like tools do. Best effort: True when something was hidden.
    """
    if not secret:
        return False
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48 and 49)
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            area = mem.read(end - start)
            new = area
            for form in {secret, quote(secret, safe=""), quote(secret)}:
                raw = form.encode("utf-8", "surrogateescape")
                new = new.replace(raw, b"*" * len(raw))
            if new == area:
                return False
            mem.seek(start)
            mem.write(new)
        return True
    except (OSError, ValueError, IndexError):
        return False
