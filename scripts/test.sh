#!/usr/bin/env bash
# Set up (if needed) and run the test suite.
# The web page is tested in a real headless browser: Debian's chromium and chromium-driver are
# installed here when they are missing and this user can install packages (root, or sudo without a
# password); otherwise those tests are skipped and the end of the run says so (under CI=true they fail).
# Debian's link-grammar (the grammar figure of `agentsum evaluate --grammar`) is installed alike.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null \
    || ! { fc-list 2>/dev/null | grep -qi "Noto Color Emoji"; } || ! command -v link-parser >/dev/null; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; fi
  if command -v apt-get >/dev/null && { [ -z "$SUDO" ] || sudo -n true 2>/dev/null; }; then
    echo "installing chromium and chromium-driver for the web page tests, and link-grammar" >&2
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver fonts-noto-color-emoji link-grammar link-grammar-dictionaries-en >/dev/null; } \
      || echo "could not install chromium or link-grammar; the web page and link-grammar tests will be skipped" >&2
  fi
fi
bash scripts/setup.sh
. .venv/bin/activate
python -m pytest -q "$@"
