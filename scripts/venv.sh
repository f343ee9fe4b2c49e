# Sourced by scripts/start and scripts/test from the checkout's root: makes .venv (with $PYTHON,
# default python3) and defines `venv_install ARGS...`, a `pip install ARGS` into it. That is uv's
# (the one on PATH, else requirements/uv.txt's, pinned by hash, put into .venv by pip) or, where
# uv has no wheel for this platform or TROUPE_INSTALLER=pip, pip's. The venv is made without pip
# (ensurepip alone takes 5-20 s on two busy cores); uv adds it afterwards, for the user's own use.
# `$venv_compile` goes on the last install: uv compiles the whole .venv's bytecode then, as pip
# does for each package it installs (without .pyc files every daemon start and CLI call compiles
# litellm's or Troupe's modules again wherever PYTHONDONTWRITEBYTECODE is set).
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv --without-pip .venv
venv_pip() {  # pip for .venv: its own, else $PY's aimed at it (pip 22.3+), else ensurepip's
  if [ -x .venv/bin/pip ]; then .venv/bin/python -m pip "$@"; return; fi
  "$PY" -m pip --python .venv/bin/python "$@" 2>/dev/null \
    || { .venv/bin/python -m ensurepip --default-pip >/dev/null && .venv/bin/python -m pip "$@"; }
}
if [ "${TROUPE_INSTALLER:-uv}" = uv ] && { uv=$(command -v uv) || { venv_pip install --quiet --disable-pip-version-check \
    --require-hashes --no-deps --only-binary :all: -r requirements/uv.txt 2>/dev/null && uv=.venv/bin/uv; }; }; then
  venv_install() { "$uv" pip install --quiet --python .venv/bin/python "$@"; }
  [ -x .venv/bin/pip ] || venv_install pip
  venv_compile=--compile-bytecode
else
  [ "${TROUPE_INSTALLER:-uv}" = pip ] || echo "uv could not be installed here: installing with pip (slower)" >&2
  venv_pip install --quiet --disable-pip-version-check --upgrade pip
  venv_install() { .venv/bin/python -m pip install --quiet --quiet --disable-pip-version-check "$@"; }
  venv_compile=
fi
