#!/usr/bin/env bash
# Adds this repository's scenarios to a copy of the side-by-side kit (../shared/bench, copied first as its
# README says): `acs-eval-cond-pg`, one AuthZEN decision through a condition (CEL), a new unregistered object
# every request, half allowed. The kit's acs/serve.sh gains two lines: with ACS_COND=1 it configures the condition
# (cond-setup.sh) through the bootstrapping instance's API, before the service itself starts.
# usage: bench/kit/add-to-kit.sh /tmp/acs-bench   (then, in the kit: ./paired.sh deno-pg-select acs-eval-cond-pg)
set -euo pipefail
kit=${1:?the kit copy\'s folder}
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/cond-setup.sh" "$kit/acs/cond-setup.sh"
cp "$here/acs-authzen-cond.lua" "$kit/wrk/acs-authzen-cond.lua"
chmod +x "$kit/acs/cond-setup.sh"
serve="$kit/acs/serve.sh"
if ! grep -q cond-setup.sh "$serve"; then
  # The line, inserted before the bootstrapping instance stops: it is the one the setup talks to.
  hook=$(mktemp)
  cat >"$hook" <<'LINE'
[ "${ACS_COND:-0}" = 1 ] && "$KIT_ACS/cond-setup.sh" "http://127.0.0.1:$((PORT + 1))" "$TOKEN_FILE"
LINE
  # Where the kit's acs/ folder is, read before serve.sh changes to the project's folder.
  awk -v hook="$hook" '
    /^cd "\$ACS_DIR"/ { print "KIT_ACS=$(cd \"$(dirname \"$0\")\" && pwd)" }
    /^kill "\$boot"/ { while ((getline l < hook) > 0) print l }
    { print }' "$serve" >"$serve.new"
  cat "$serve.new" >"$serve"
  rm -f "$serve.new" "$hook"
  grep -q cond-setup.sh "$serve" || { echo "could not add the hook to $serve" >&2; exit 1; }
fi
if ! grep -q acs-eval-cond-pg "$kit/scenarios.sh"; then
  cat >>"$kit/scenarios.sh" <<'LINES'
# A decision through a condition (CEL), from the repository's bench/kit: the role holds doc:write only when the
# object's owner is the subject.
scen acs-eval-cond-pg http://127.0.0.1:8020/access/v1/evaluation wrk/acs-authzen-cond.lua env ACS_DB=pg ACS_COND=1 acs/serve.sh
LINES
fi
echo "added acs-eval-cond-pg to $kit"
