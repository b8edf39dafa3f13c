"""What every benchmark shares: the machine header, timing a whole process, tables, the fake embedder.

    run = measure([sys.executable, "ask_rag.py", "--retrieve-only", "Frage"])
    run.seconds, run.peak_mb, run.stdout   # wall time, peak RSS of that process (ru_maxrss), output

Peak memory is getrusage(RUSAGE_CHILDREN).ru_maxrss in a fresh, tiny parent per measurement (see
WRAPPER): the largest RSS of that process or of its own children. Benchmarks subtract the peak of
an idle `python3 -c pass` measured the same way (idle_python_mb).

Does not handle: Windows (no os.wait4, posix_spawnp), CPU frequency pinning or isolating the machine.
"""
import ast
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MB = 1024 * 1024

# Words for synthetic German wiki text (folded spelling, as German IT wikis often write them)
GERMAN_WORDS = """
mailbox postfach quota speicherplatz cyrus imap cyradm benutzer konto passwort kennwort zugang vpn
client server netzwerk drucker treiber warteschlange laptop notebook bildschirm sperre backup
sicherung wiederherstellung datei ordner freigabe netzlaufwerk richtlinie sicherheit phishing
anmeldung zwei faktor token zertifikat firewall wlan adresse ip router switch ticket helpdesk
vertrag kuendigungsfrist dienstleister rahmenvertrag lizenz software bestellung onboarding
offboarding urlaubsvertretung abwesenheit telefon headset mobilgeraet ersatzteil austausch
wartung fehler meldung antrag genehmigung administrator gruppe rechte berechtigung verzeichnis
anlegen loeschen einrichten aendern pruefen starten beenden konfigurieren sperren freischalten
neue alte eigene gemeinsame interne externe monatlich jaehrlich sofort spaetestens immer
die der das und mit fuer von im auf nach bei wird werden ist sind eine einen den dem
""".split()


# -- the machine -----------------------------------------------------------------------------------
def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def python_build():
    """'PGO+LTO', 'PGO', 'LTO' or 'ohne PGO/LTO' (pyenv builds without; distributions with): ±20 % speed."""
    args = sysconfig.get_config_var("CONFIG_ARGS") or ""
    flags = [name for name, flag in (("PGO", "--enable-optimizations"), ("LTO", "--with-lto")) if flag in args]
    return "+".join(flags) or "ohne PGO/LTO"


def machine():
    """The conditions of a run, for the header of every table and the --json output."""
    return {"python": platform.python_version(), "python_build": python_build(),
            "implementation": platform.python_implementation(),
            "platform": platform.platform(terse=True), "cpu": cpu_name(), "cores": os.cpu_count(),
            "loadavg": loadavg(), "time": time.strftime("%Y-%m-%d %H:%M:%S")}


def header(title, info=None):
    """Example: header("Suche") -> 'Suche · Python 3.11.7 · AMD EPYC, 2 Kerne · Last 0.1 0.2 0.3'"""
    info = info or machine()
    load = " ".join(f"{x:.2f}" for x in info["loadavg"]) if info["loadavg"] else "?"
    return (f"{title}\nPython {info['python']} ({info['python_build']}) · {info['cpu']}, {info['cores']} Kerne · "
            f"{info['platform']} · Last (1/5/15 min) {load} · {info['time']}")


def command_line():
    return "python3 " + " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])


# -- measuring -------------------------------------------------------------------------------------
@dataclass
class Run:
    seconds: float  # wall clock
    cpu_s: float  # user + system CPU time of the process: steadier than wall time on a busy machine
    peak_mb: float
    returncode: int
    stdout: str
    stderr: str


# A fresh, small parent for every measured process. Linux carries a process's peak RSS across
# exec, and subprocess starts children with vfork: measured straight from this (large) process,
# ru_maxrss would report at least our own size. The wrapper (python -S, no imports beyond os)
# spawns the command, waits for it and writes wall time and getrusage(RUSAGE_CHILDREN) to a file.
WRAPPER = """import os, sys, time
start = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, _ = os.wait4(pid, 0)
seconds = time.perf_counter() - start
usage = __import__("resource").getrusage(__import__("resource").RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write(repr((seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status))))
"""


def measure(cmd, env=None, cwd=ROOT, timeout=3600):
    """Run `cmd` once; wall time, CPU time and peak RSS of that process. Fails loudly on a non-zero exit."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".txt") as report:
        process = subprocess.Popen([sys.executable, "-S", "-c", WRAPPER, report.name, *map(str, cmd)],
                                   stdout=out, stderr=err, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise SystemExit(f"Fehler: {cmd[0]} lief länger als {timeout} s – abgebrochen.")
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
        if process.returncode != 0:  # the wrapper itself failed (e.g. command not found)
            raise SystemExit(f"Fehler: {cmd[0]} ließ sich nicht starten: {stderr.strip().splitlines()[-1:]}")
        seconds, cpu, maxrss, code = ast.literal_eval(report.read())
    if code != 0:
        tail = stderr.strip().splitlines()[-3:]
        raise SystemExit(f"Fehler: {' '.join(map(str, cmd[:3]))} … endete mit Code {code}: " + " | ".join(tail))
    return Run(seconds, cpu, maxrss_mb(maxrss), code, stdout, stderr)


def maxrss_mb(value):
    """ru_maxrss is KiB on Linux, bytes on macOS."""
    return value / MB if sys.platform == "darwin" else value / 1024


def idle_python_mb(python=sys.executable):
    """Peak RSS of `python -c pass`: the baseline subtracted from every process measurement."""
    return statistics.median(measure([python, "-c", "pass"]).peak_mb for _ in range(3))


def require(*paths):
    """Stop with one German line naming the setup when a binary or model is missing.

    Example: require(("/x/llama-server", "llama-server")) -> SystemExit("Fehler: llama-server nicht gefunden (/x/…) – …")
    """
    for path, what in paths:
        if not os.path.isfile(path):
            raise SystemExit(f"Fehler: {what} nicht gefunden ({path}) – einrichten mit: python3 scripts/setup_llama.py")


def build_quietly(env, timeout=1800):
    """build_index.py --quiet with `env` (RAG_WIKI, RAG_DB, …); one German line with the end of stderr if it fails."""
    print("  Index bauen …", file=sys.stderr, flush=True)
    built = subprocess.run([sys.executable, str(ROOT / "build_index.py"), "--quiet"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=timeout)
    if built.returncode != 0:
        raise SystemExit(f"Fehler: build_index.py scheiterte: {built.stderr.strip()[-300:]}")


def median(values):
    """Example: median([3, 1, 2]) -> 2; median([]) -> None"""
    return statistics.median(values) if values else None


def require_llama(args):
    """common.require for a benchmark's llama-embedding, llama-server, embedding model and answer model."""
    require((args.embedding_bin, "llama-embedding"), (args.server_bin, "llama-server"), (args.model, "Modell"),
            (args.llm_model, "LLM-Modell"))


def timed(function, *args):
    """(seconds, result) of one call. Example: timed(sum, [1, 2]) -> (1e-06, 3)"""
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


# -- output ----------------------------------------------------------------------------------------
def fmt(value):
    """Numbers for tables: None -> '–', bool -> ja/nein, ints grouped, floats to 3 significant places.

    Example: fmt(20000) -> '20 000'; fmt(0.12345) -> '0.123'; fmt(12.345) -> '12.3'; fmt(1234.5) -> '1 234'
    """
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "ja" if value else "nein"
    if isinstance(value, float) and abs(value) >= 100:
        value = round(value)
    if isinstance(value, int):
        return f"{value:,}".replace(",", " ")
    if isinstance(value, float) and abs(value) >= 10:
        return f"{value:.1f}"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) >= 0.001 or not value else f"{value:.1e}"
    return str(value)


NUMBER = re.compile(r"^[-+]?[\d .,]+(e[-+]\d+)?[%x]?$|^–$")


def table(columns, rows):
    """A plain-text table; columns = [(key, title)], rows = [dict]; number columns right-aligned."""
    cells = [[fmt(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max([len(title)] + [len(c[i]) for c in cells]) for i, (_, title) in enumerate(columns)]
    numeric = [all(NUMBER.match(c[i]) for c in cells) for i in range(len(columns))]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    return "\n".join([line([t for _, t in columns]), line(["-" * w for w in widths])] + [line(c) for c in cells])


def emit(args, report, text):
    """--json: exactly one JSON object on stdout; else the readable tables."""
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(text)


def goal_line(name, met, detail):
    return f"Ziel {name}: {'erreicht' if met else 'NICHT erreicht'} ({detail})"


# -- the fake embedder -----------------------------------------------------------------------------
FAKE_EMBEDDING = textwrap.dedent('''\
    #!{python}
    """Fake llama-embedding for benchmarks: llama-embedding's JSON, vectors in microseconds.

    FAKE_QUERY_FILE set: prints that file (a ready JSON answer) for every call; else one vector per
    prompt of FAKE_DIM floats derived from the prompt's hash (same text -> same vector).
    """
    import hashlib, json, os, random, sys
    if os.environ.get("FAKE_QUERY_FILE"):
        sys.stdout.write(open(os.environ["FAKE_QUERY_FILE"]).read())
        sys.exit(0)
    args = sys.argv[1:]
    text = open(args[args.index("-f") + 1], encoding="utf-8").read() if "-f" in args else args[args.index("-p") + 1]
    sep = args[args.index("--embd-separator") + 1] if "--embd-separator" in args else "\\n"
    dim = int(os.environ.get("FAKE_DIM", "640"))
    data = []
    for i, prompt in enumerate(text.split(sep)):
        rnd = random.Random(hashlib.sha256(prompt.encode()).digest())
        v = [rnd.uniform(-1, 1) for _ in range(dim)]
        n = sum(x * x for x in v) ** 0.5
        data.append({{"object": "embedding", "index": i, "embedding": [round(x / n, 7) for x in v]}})
    print(json.dumps({{"object": "list", "data": data}}))
''')


def write_fake_embedder(folder):
    """A fake llama-embedding script and a fake model file in `folder`; returns (binary, model)."""
    folder = Path(folder)
    binary = folder / "fake-llama-embedding"
    binary.write_text(FAKE_EMBEDDING.format(python=sys.executable))
    binary.chmod(0o755)
    model = folder / "fake-embed-model.gguf"
    model.write_bytes(b"GGUF fake model for benchmarks")
    return str(binary), str(model)
