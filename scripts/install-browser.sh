#!/usr/bin/env bash
# Installs Debian's Chromium for the dashboard's end-to-end tests (test/dashboard/), which drive it
# with playwright-core. Playwright's own browser download is not used: this machine and CI reach only
# the npm registry and Debian's packages, and the distribution build is what operators have anyway.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-browser: /usr/bin/chromium is missing; run as root (or: sudo apt-get install -y chromium)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version
