#!/usr/bin/env bash
# The system packages the test suite needs beside what `npm ci` brings: bubblewrap (the OS sandbox
# of local execution), socat (the bridge from a sandbox to its network proxy) and Chromium (drives
# the approval page in its tests). Installs the missing
# ones with apt-get when this user is root or has passwordless sudo; otherwise says what to install
# and leaves the tests that need them to fail with their own message. Never fails itself.
set -uo pipefail

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v socat >/dev/null 2>&1 || missing+=(socat)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo="none"; fi
fi
if [ "$sudo" = "none" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "pml tests: missing system packages: ${missing[*]} (Debian/Ubuntu: sudo apt-get install ${missing[*]}); the tests that need them will fail" >&2
  exit 0
fi
echo "pml tests: installing ${missing[*]} with apt-get" >&2
{ $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"; } >&2 ||
  echo "pml tests: could not install ${missing[*]}; the tests that need them will fail" >&2
exit 0
