#!/usr/bin/env bash
# README command 2: install what the tests need, set up llama.cpp + model, run the whole suite.
# The real end-to-end tests fail (not skip) when the setup is missing and CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt
python3 scripts/setup_llama.py
python3 -m pytest -q "$@"
