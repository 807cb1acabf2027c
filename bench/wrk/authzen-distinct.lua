-- wrk script for the shared kit (../shared/bench): like its wrk/acs-authzen.lua, but no two requests ask the same
-- question. Each request names an object of its own (`r-<thread>-<n>`), so the service can never answer one from
-- another asked at the same moment (db/batch.ts reads a repeated question once). ACS_BATCH=100 sends batches of
-- 100 items, each batch's objects its own too. Use it as a scenario of the kit, e.g. in its scenarios.sh:
--   scen acs-eval-distinct-pg http://127.0.0.1:8020/access/v1/evaluation /path/to/bench/wrk/authzen-distinct.lua env ACS_DB=pg acs/serve.sh
local f = assert(io.open(os.getenv("ACS_TOKEN_FILE") or "/tmp/bench-acs-bearer.jwt", "r"))
local token = f:read("*a"):gsub("%s+$", "")
f:close()
local n = tonumber(os.getenv("ACS_BATCH") or ((wrk.path or ""):match("evaluations$") and "100" or "0"))
local subject = '{"type":"client","id":"system-admin"}'
local counter = 0
local tag = tostring(math.random(1, 1000000000))
local headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
function request()
  local body
  if n <= 0 then
    counter = counter + 1
    local action = (counter % 2 == 1) and "read" or "fly"
    body = '{"subject":' .. subject .. ',"action":{"name":"' .. action .. '"},"resource":{"type":"roles","id":"r-' ..
      tag .. '-' .. counter .. '"}}'
  else
    local items = {}
    for i = 1, n do
      counter = counter + 1
      local action = (i % 2 == 1) and "read" or "fly"
      items[i] = '{"action":{"name":"' .. action .. '"},"resource":{"type":"roles","id":"r-' .. tag .. '-' .. counter .. '"}}'
    end
    body = '{"subject":' .. subject .. ',"evaluations":[' .. table.concat(items, ",") .. ']}'
  end
  return wrk.format("POST", nil, headers, body)
end
local bad = 0
function response(status, headers, body)
  if status ~= 200 then
    bad = bad + 1
    if bad <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. (body or "") .. "\n") end
  end
end
