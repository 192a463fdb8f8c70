#!/usr/bin/env bash
# Installs the MCP clients the tests drive, outside the clone and cached between runs:
# the official TypeScript SDK client, and the Claude Code and Codex CLIs (configuration
# checks only: no model is reached). Idempotent: an installed version is kept.
set -euo pipefail
dir="${AIRLOCK_NPM_DIR:-/var/cache/airlock/npm}"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "installing: nodejs npm"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
install() { # install SUBDIR PACKAGE@VERSION...
  local sub=$1; shift
  mkdir -p "$dir/$sub"
  local missing=()
  for spec in "$@"; do
    local name=${spec%@*} version=${spec##*@}
    local have
    have=$(node -e "try{console.log(require('$dir/$sub/node_modules/$name/package.json').version)}catch(e){}" 2>/dev/null || true)
    [ "$have" = "$version" ] || missing+=("$spec")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "npm install (into $dir/$sub): ${missing[*]}"
    [ -f "$dir/$sub/package.json" ] || (cd "$dir/$sub" && npm init -y >/dev/null)
    (cd "$dir/$sub" && npm install --no-audit --no-fund --loglevel=error "${missing[@]}" >/dev/null)
  fi
}
install sdk @modelcontextprotocol/sdk@1.32.2
install clients @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0
