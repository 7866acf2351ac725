# Sourced by bin/serve and bin/test: make sure .venv exists and holds the requirements.
#
#   ensure_venv requirements.txt         # what the service needs to run
#   ensure_venv requirements-dev.txt     # that plus what the tests need
#
# pip runs only when a requirements file changed since the last install: a hash of the
# files is kept in .venv/.installed-<file>. PYTHON names the interpreter to build the
# virtualenv with (default: python3.11, else python3 if it is 3.11 or newer).

find_python() {
  local candidate
  for candidate in ${PYTHON:-} python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  echo "error: Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

# Every requirements file includes requirements.txt (-r): hash both, so a change to either counts.
requirements_digest() {
  cat requirements.txt "$1" | .venv/bin/python -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'
}

ensure_venv() {
  local requirements=$1 python stamp digest
  if ! .venv/bin/python -c 'import sys' >/dev/null 2>&1; then
    python=$(find_python)
    echo "Creating the virtualenv .venv with $python ..." >&2
    rm -rf .venv
    "$python" -m venv .venv
  fi
  digest=$(requirements_digest "$requirements")
  stamp=".venv/.installed-$requirements"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
    echo "Installing $requirements into .venv ..." >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
    echo "$digest" >"$stamp"
    # requirements.txt came with it.
    requirements_digest requirements.txt >.venv/.installed-requirements.txt
  fi
}
