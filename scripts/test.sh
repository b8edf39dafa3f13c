#!/usr/bin/env bash
# README command 2: install what the tests need, set up llama.cpp + model, run the whole suite.
# The real end-to-end tests fail (not skip) when the setup is missing and CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt
python3 scripts/setup_llama.py
# two workers (pytest-xdist), each taking whole files, so a file's shared fixtures are built once;
# the slowest files first (tests/conftest.py FIRST), so both end together; RAG_TEST_WORKERS=0 runs
# everything in this one process
python3 -m pytest -q -n "${RAG_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
