# Sourced by scripts/wheels.sh and scripts/test.sh: `find_python 3.12`
# prints the interpreter of that version, on PATH or else pyenv's newest
# of that line, and fails saying so when there is none.
find_python() {
  local v=$1 p
  p=$(command -v "python$v" 2>/dev/null || true)
  if [ -n "$p" ] && "$p" -c 'import sys' 2>/dev/null; then
    echo "$p"
    return
  fi
  for p in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".* 2>/dev/null | sort -V -r); do
    if [ -x "$p/bin/python$v" ]; then
      echo "$p/bin/python$v"
      return
    fi
  done
  echo "no python$v found (PATH or pyenv)" >&2
  return 1
}
