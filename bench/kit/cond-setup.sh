#!/usr/bin/env bash
# Configure a condition for the "decision through a condition" scenario (wrk/acs-authzen-cond.lua), through the
# API of a service on $1 (its base URL) with the admin token in $2's file: in the system project, a resource
# `doc` (write), a role holding write under `resource.properties.owner == subject.id`, and a user `bench-user`
# (its external id) with that role.
set -euo pipefail
base=$1; token=$(cat "$2"); P=$base/api/v1/projects/system
j() { curl -fsS -H "authorization: Bearer $token" -H 'content-type: application/json' "$@"; }
perm=$(j -d '{"name":"Doc","code":"doc","permissions":[{"name":"Write","code":"write"}]}' "$P/resources" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).permissions[0].id))')
role=$(j -d "{\"name\":\"Owner\",\"code\":\"owner\",\"permission_ids\":[\"$perm\"],\"conditions\":[{\"permission_id\":\"$perm\",\"expression\":\"resource.properties.owner == subject.id\"}]}" "$P/roles" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).id))')
j -d "{\"display_name\":\"Bench\",\"external_user_id\":\"bench-user\",\"role_id\":\"$role\"}" "$P/users" >/dev/null
