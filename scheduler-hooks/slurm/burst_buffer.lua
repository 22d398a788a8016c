--[[
Strata prefetch for Slurm: a script for Slurm's burst_buffer/lua plugin.

A job asks for its data to be staged into Strata's L2 tier before it starts with a directive
among the #SBATCH lines of its batch script:

    #BB_LUA strata prefetch path=/datasets/imagenet deadline=30m priority=5

What this script does, stage by stage (the function Slurm calls in brackets):

  submission  (slurm_bb_job_process)  checks the directive's syntax only, so that sbatch rejects
              a typo at once; no network call (this runs inside slurmctld, under its locks).
  stage-in    (slurm_bb_setup)        nothing: the hint is posted in data_in, which may run long.
              (slurm_bb_data_in)      posts the hint to Strata's scheduler hooks (job = the Slurm
              job id, nodes = the job's nodes when Slurm already knows them) and polls it. The job
              stays pending in stage-in until the hint is `ready`; past STRATA_BB_MAX_WAIT it is
              let go while the data is still staging (it starts "at-risk": reads of chunks not yet
              in L2 go to L3). A hint that `failed` (or was cancelled) fails the stage-in: Slurm
              holds the job and shows the hint's message as its reason.
  job start   (slurm_bb_paths)        puts STRATA_HOOKS (the base URL) and STRATA_HOOKS_CA (when
              set) into the job's environment, so the job can look at its hints
              (curl --cacert "$STRATA_HOOKS_CA" "$STRATA_HOOKS/v1/hints?job=$SLURM_JOB_ID").
  teardown    (slurm_bb_job_teardown) ends the job's hints (POST /v1/jobs/{job}/end): the L2
              agents release what was pinned for it and the hints are removed. A failure here
              is returned to Slurm, which retries the teardown.
  status      (slurm_bb_get_status)   `scontrol show bbstat [JOBID]` lists the hints.

Installation: this file must be named burst_buffer.lua and sit in the directory of slurm.conf;
burst_buffer.conf there selects the plugin and bounds the calls (see docs/scheduler-hooks.md,
section "Slurm"). Settings come from, later ones winning:
  1. the defaults below,
  2. strata-bb.conf next to this file (KEY=VALUE lines, # comments),
  3. slurmctld's environment.

Slurm runs each slurm_bb_* function in a fresh Lua state (Lua 5.1), so nothing is kept between
calls: the hint of a job is found again by asking the hooks server for the job's hints. The calls
go through curl, so this script needs nothing but curl on the slurmctld host. Where the hooks
server has a [tls] table (what `strata up` and a TLS cluster run) its API is HTTPS with a
certificate of the cluster CA: set STRATA_HOOKS_CA to that CA's certificate file and curl
verifies the server with it.
--]]

local DEFAULTS = {
	-- The hooks server: HOST:PORT or a URL (https://HOST:PORT). A HOST:PORT is https:// when
	-- STRATA_HOOKS_CA is set, else http://.
	STRATA_HOOKS = "127.0.0.1:7390",
	-- The CA certificate (PEM) that issued the hooks server's certificate: the cluster CA, e.g.
	-- a strata up cluster's DATA/tls/ca.pem. curl verifies the server with it (--cacert). It
	-- holds no secret: make it readable by slurmctld's user and by the jobs (it is passed to
	-- them). Empty: none (a hooks server without TLS, or one the system's CAs vouch for).
	STRATA_HOOKS_CA = "",
	-- How long stage-in waits for `ready` before it lets the job start at-risk (90s, 30m, 2h;
	-- a bare number is seconds). Keep it under StageInTimeout in burst_buffer.conf.
	STRATA_BB_MAX_WAIT = "1h",
	-- How often stage-in asks for the hint's state.
	STRATA_BB_POLL = "2s",
	-- "job": send the job's nodes when Slurm knows them at stage-in (requested with
	-- --nodelist, or planned by the backfill scheduler); "none": never (any L2 agent stages).
	STRATA_BB_NODES = "job",
	-- Where the Strata namespace is mounted on the compute nodes: a directive's path under it
	-- is taken relative to it (path=/mnt/strata/datasets/x means /datasets/x). Empty: none.
	STRATA_BB_MOUNT = "",
	-- The time limit of one request, and of the submission (which expands the paths: about
	-- 10,000 files a second).
	STRATA_BB_REQUEST_TIMEOUT = "15s",
	STRATA_BB_SUBMIT_TIMEOUT = "10m",
	-- A file (readable by slurmctld's user only) holding a token of role scheduler, from
	-- `strata admin token create --role scheduler`: sent as "Authorization: Bearer" through
	-- curl's standard input, never on a command line. Empty: none (a cluster without
	-- authentication).
	STRATA_BB_TOKEN_FILE = "",
	-- The curl command (add options here, e.g. "curl --noproxy '*'").
	STRATA_BB_CURL = "curl",
	-- Slurm's tools, for the job's nodes.
	STRATA_BB_SCONTROL = "scontrol",
}

local SCRIPT_NAME = "burst_buffer.lua"

---------------------------------------------------------------------------------------------
-- Logging: lines in slurmctld's log, prefixed so that they are easy to find.
---------------------------------------------------------------------------------------------

local function info(fmt, ...)
	slurm.log_info("%s", "strata: " .. string.format(fmt, ...))
end

local function err(fmt, ...)
	slurm.log_error("%s", "strata: " .. string.format(fmt, ...))
end

---------------------------------------------------------------------------------------------
-- Settings
---------------------------------------------------------------------------------------------

-- The directory this script was loaded from (Slurm loads it by its full path).
local function script_dir()
	local src = debug.getinfo(1, "S").source
	if src:sub(1, 1) == "@" then
		return src:sub(2):match("^(.*)/[^/]*$") or "."
	end
	return "/etc/slurm"
end

local function trim(s)
	return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- Reads the settings: defaults, then strata-bb.conf, then the environment.
local function load_config()
	local conf = {}
	for k, v in pairs(DEFAULTS) do
		conf[k] = v
	end
	local f = io.open(script_dir() .. "/strata-bb.conf", "r")
	if f then
		for line in f:lines() do
			line = trim(line:gsub("#.*$", ""))
			local k, v = line:match("^([%w_]+)%s*=%s*(.-)$")
			if k then
				conf[k] = v:gsub('^"(.*)"$', "%1")
			end
		end
		f:close()
	end
	for k, _ in pairs(DEFAULTS) do
		local v = os.getenv(k)
		if v and v ~= "" then
			conf[k] = v
		end
	end
	return conf
end

-- Seconds in a duration: 90, 90s, 30m, 2h, 1d.
local function seconds(s)
	local n, unit = tostring(s):match("^%s*(%d+)%s*([smhd]?)%s*$")
	if not n then
		return nil
	end
	local mult = { [""] = 1, s = 1, m = 60, h = 3600, d = 86400 }
	return tonumber(n) * mult[unit]
end

local function setting_seconds(conf, key)
	local v = seconds(conf[key])
	if not v then
		err("%s=%s is not a duration; using %s", key, tostring(conf[key]), DEFAULTS[key])
		v = seconds(DEFAULTS[key])
	end
	return v
end

-- The CA file that verifies the hooks server, or nil when none is set.
local function ca_file(conf)
	local ca = trim(conf.STRATA_HOOKS_CA or "")
	if ca == "" then
		return nil
	end
	return ca
end

-- The hooks server's base URL, from HOST:PORT (https:// with a CA file, else http://),
-- https://HOST:PORT or https://HOST:PORT/v1/.
local function base_url(conf)
	local u = trim(conf.STRATA_HOOKS)
	if not u:find("://", 1, true) then
		u = (ca_file(conf) and "https://" or "http://") .. u
	end
	u = u:gsub("/+$", ""):gsub("/v1$", "")
	return u
end

---------------------------------------------------------------------------------------------
-- JSON: just what the hooks API needs (its answers are objects of strings, numbers, lists).
---------------------------------------------------------------------------------------------

local function json_string(s)
	local escaped = s:gsub('[%c"\\]', function(c)
		local named = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
		return named[c] or string.format("\\u%04x", c:byte())
	end)
	return '"' .. escaped .. '"'
end

local function json_list(items)
	local out = {}
	for i, s in ipairs(items) do
		out[i] = json_string(s)
	end
	return "[" .. table.concat(out, ",") .. "]"
end

-- Decodes a JSON text; returns the value, or nil and what is wrong.
local function json_decode(text)
	local pos = 1
	local value

	local function fail(what)
		error({ json = what .. " at offset " .. pos }, 0)
	end
	local function space()
		pos = text:find("[^ \t\r\n]", pos) or (#text + 1)
	end
	local function str()
		local out = {}
		pos = pos + 1 -- the opening quote
		while true do
			local c = text:sub(pos, pos)
			if c == "" then
				fail("unterminated string")
			elseif c == '"' then
				pos = pos + 1
				return table.concat(out)
			elseif c == "\\" then
				local e = text:sub(pos + 1, pos + 1)
				local simple = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }
				if simple[e] then
					out[#out + 1] = simple[e]
					pos = pos + 2
				elseif e == "u" then
					local code = tonumber(text:sub(pos + 2, pos + 5), 16) or fail("bad \\u escape")
					-- UTF-8 for the Basic Multilingual Plane; enough for messages and paths.
					if code < 0x80 then
						out[#out + 1] = string.char(code)
					elseif code < 0x800 then
						out[#out + 1] = string.char(0xC0 + math.floor(code / 64), 0x80 + code % 64)
					else
						out[#out + 1] = string.char(0xE0 + math.floor(code / 4096),
							0x80 + math.floor(code / 64) % 64, 0x80 + code % 64)
					end
					pos = pos + 6
				else
					fail("bad escape")
				end
			else
				local stop = text:find('["\\]', pos) or (#text + 1)
				out[#out + 1] = text:sub(pos, stop - 1)
				pos = stop
			end
		end
	end
	value = function()
		space()
		local c = text:sub(pos, pos)
		if c == "{" then
			local obj = {}
			pos = pos + 1
			space()
			if text:sub(pos, pos) == "}" then
				pos = pos + 1
				return obj
			end
			while true do
				space()
				if text:sub(pos, pos) ~= '"' then
					fail("expected a key")
				end
				local k = str()
				space()
				if text:sub(pos, pos) ~= ":" then
					fail("expected ':'")
				end
				pos = pos + 1
				obj[k] = value()
				space()
				c = text:sub(pos, pos)
				pos = pos + 1
				if c == "}" then
					return obj
				elseif c ~= "," then
					fail("expected ',' or '}'")
				end
			end
		elseif c == "[" then
			local list = {}
			pos = pos + 1
			space()
			if text:sub(pos, pos) == "]" then
				pos = pos + 1
				return list
			end
			while true do
				list[#list + 1] = value()
				space()
				c = text:sub(pos, pos)
				pos = pos + 1
				if c == "]" then
					return list
				elseif c ~= "," then
					fail("expected ',' or ']'")
				end
			end
		elseif c == '"' then
			return str()
		else
			local lit = text:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
			if lit and #lit > 0 then
				pos = pos + #lit
				return tonumber(lit)
			end
			for word, v in pairs({ ["true"] = true, ["false"] = false, ["null"] = false }) do
				if text:sub(pos, pos + #word - 1) == word then
					pos = pos + #word
					if word == "null" then
						return nil
					end
					return v
				end
			end
			fail("unexpected character")
		end
	end

	local ok, result = pcall(function()
		local v = value()
		space()
		if pos <= #text then
			fail("trailing text")
		end
		return v
	end)
	if ok then
		return result
	end
	if type(result) == "table" then
		return nil, result.json
	end
	return nil, tostring(result)
end

---------------------------------------------------------------------------------------------
-- Running commands and HTTP calls
---------------------------------------------------------------------------------------------

-- A word for sh, single-quoted.
local function sh_quote(s)
	return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Runs a shell command; returns what it printed (stdout and stderr).
local function run(cmd)
	local p = io.popen(cmd .. " 2>&1", "r")
	if not p then
		return ""
	end
	local out = p:read("*a") or ""
	p:close()
	return out
end

local function sleep(s)
	os.execute("sleep " .. tonumber(s))
end

-- What to check when curl failed in a way TLS explains: a certificate it could not verify, or
-- plain HTTP to a server that speaks HTTPS (which closes the connection without an answer).
local function tls_hint(conf, curl_out)
	local url = base_url(conf)
	if url:sub(1, 8) == "https://" and (curl_out:find("SSL", 1, true) or curl_out:find("certificate", 1, true)) then
		return " (is STRATA_HOOKS_CA the CA that issued the hooks server's certificate?)"
	elseif url:sub(1, 7) == "http://" and (curl_out:find("Empty reply", 1, true) or curl_out:find("Recv failure", 1, true)) then
		return " (a hooks server with [tls] speaks HTTPS only: set STRATA_HOOKS_CA to the cluster CA's certificate)"
	end
	return ""
end

-- An HTTP call to the hooks server, limited to the duration in setting timeout_key. Returns
-- the status (0 when the server could not be reached), the decoded JSON answer (or nil) and,
-- when the call failed, a message.
local function http(conf, method, path, body, timeout_key)
	local cmd = conf.STRATA_BB_CURL .. " -sS -m " .. setting_seconds(conf, timeout_key) .. " -X " .. method
		.. " -H 'Content-Type: application/json' -w '\\n%{http_code}'"
	if body then
		cmd = cmd .. " --data-binary " .. sh_quote(body)
	end
	if ca_file(conf) then
		cmd = cmd .. " --cacert " .. sh_quote(ca_file(conf))
	end
	cmd = cmd .. " " .. sh_quote(base_url(conf) .. path)
	local token_file = trim(conf.STRATA_BB_TOKEN_FILE or "")
	if token_file ~= "" then
		cmd = "sed -n '1s/^/Authorization: Bearer /p' " .. sh_quote(token_file) .. " | " .. cmd .. " -H @-"
	end
	local out = run(cmd)
	local text, code = out:match("^(.*)\n(%d%d%d)%s*$")
	code = tonumber(code or "0")
	if code == 0 then
		-- curl's first line says what failed (the rest of a certificate error is advice for browsers)
		local first = trim(text or out):match("^[^\n]*")
		return 0, nil, "the scheduler hooks at " .. base_url(conf) .. " are unreachable: " .. first .. tls_hint(conf, out)
	end
	local doc = json_decode(text)
	if code >= 400 then
		local why = (type(doc) == "table" and doc.error) or trim(text)
		return code, doc, string.format("%s (HTTP %d from %s %s)", why, code, method, path)
	end
	return code, doc, nil
end

local function urlencode(s)
	return (tostring(s):gsub("[^%w%-_%.~]", function(c)
		return string.format("%%%02X", c:byte())
	end))
end

---------------------------------------------------------------------------------------------
-- The directive
---------------------------------------------------------------------------------------------

-- Splits a directive into words; a value may be double-quoted to hold spaces (path="/a b").
local function words(s)
	local out, i = {}, 1
	while true do
		local a = s:find("%S", i)
		if not a then
			return out
		end
		local w, j = {}, a
		while j <= #s and not s:sub(j, j):match("%s") do
			local c = s:sub(j, j)
			if c == '"' then
				local k = s:find('"', j + 1, true)
				if not k then
					return nil, "unterminated quote in: " .. s
				end
				w[#w + 1] = s:sub(j + 1, k - 1)
				j = k + 1
			else
				w[#w + 1] = c
				j = j + 1
			end
		end
		out[#out + 1] = table.concat(w)
		i = j
	end
end

--[[
Reads the job script's Strata directives. Like Slurm, it looks only at the comment lines before
the first command. Each line "#BB_LUA strata prefetch KEY=VALUE ..." adds to one hint:
  path=P      a file, directory or glob in the Strata namespace (repeat for more; required)
  deadline=D  when the job wants to start: 30m, 2h, or an instant 2026-12-01T20:00:00Z
  priority=N  0..9, higher first
  qos=C       the QoS class the data is fetched in: prefetch (the default), background, training-read
Other #BB_LUA lines (not starting with "strata") are left to other tools. Returns the hint's
fields ({paths, deadline, priority, qos}), or nil when the script has no Strata directive, or nil
and what is wrong with it.
--]]
local function read_directives(conf, script)
	local f, why = io.open(script, "r")
	if not f then
		return nil, "cannot read the job script: " .. tostring(why)
	end
	local lines, pending = {}, nil
	for line in f:lines() do
		if pending then
			-- a line ending in a backslash continues on the next #BB_LUA line
			line = pending .. " " .. (line:match("^#BB_LUA(.*)$") or "")
			pending = nil
		elseif line:sub(1, 1) ~= "#" then
			if line:match("%S") then
				break
			end
		end
		if line:match("^#BB_LUA%s") and line:match("\\$") then
			pending = line:sub(1, -2)
		elseif line:match("^#BB_LUA%s") then
			lines[#lines + 1] = line:sub(8)
		end
	end
	f:close()

	local spec = nil
	local mount = trim(conf.STRATA_BB_MOUNT or ""):gsub("/+$", "")
	for _, line in ipairs(lines) do
		local w, bad = words(line)
		if not w then
			return nil, bad
		end
		if w[1] == "strata" then
			if w[2] ~= "prefetch" then
				return nil, "unknown Strata directive \"" .. tostring(w[2]) .. "\" (expected: #BB_LUA strata prefetch path=...)"
			end
			spec = spec or { paths = {} }
			for i = 3, #w do
				local k, v = w[i]:match("^(%w+)=(.*)$")
				if not k or v == "" then
					return nil, "\"" .. w[i] .. "\" is not KEY=VALUE (keys: path, deadline, priority, qos)"
				elseif k == "path" then
					if mount ~= "" and (v == mount or v:sub(1, #mount + 1) == mount .. "/") then
						v = v:sub(#mount + 1)
						if v == "" then
							v = "/"
						end
					end
					if v:sub(1, 1) ~= "/" then
						return nil, "path=" .. v .. " is not absolute"
					end
					spec.paths[#spec.paths + 1] = v
				elseif k == "deadline" then
					if not (seconds(v) or v:match("^%d%d%d%d%-%d%d%-%d%dT")) then
						return nil, "deadline=" .. v .. " is neither a delay (90s, 30m, 2h) nor an instant (2026-12-01T20:00:00Z)"
					end
					if spec.deadline and spec.deadline ~= v then
						return nil, "two deadlines: " .. spec.deadline .. " and " .. v
					end
					spec.deadline = v
				elseif k == "priority" then
					local n = tonumber(v)
					if not n or n ~= math.floor(n) or n < 0 or n > 9 then
						return nil, "priority=" .. v .. " is not 0..9"
					end
					if spec.priority and spec.priority ~= n then
						return nil, "two priorities: " .. spec.priority .. " and " .. n
					end
					spec.priority = n
				elseif k == "qos" then
					if v ~= "prefetch" and v ~= "background" and v ~= "training-read" then
						return nil, "qos=" .. v .. " is not prefetch, background or training-read"
					end
					if spec.qos and spec.qos ~= v then
						return nil, "two classes: " .. spec.qos .. " and " .. v
					end
					spec.qos = v
				else
					return nil, "unknown key \"" .. k .. "\" (keys: path, deadline, priority, qos)"
				end
			end
		end
	end
	if spec and #spec.paths == 0 then
		return nil, "#BB_LUA strata prefetch needs at least one path=..."
	end
	return spec
end

---------------------------------------------------------------------------------------------
-- Hints
---------------------------------------------------------------------------------------------

-- The job's nodes, when Slurm knows them while the job is pending: those it asked for
-- (--nodelist), else those the backfill scheduler plans for it. Empty when neither is known.
local function job_nodes(conf, job_id)
	if conf.STRATA_BB_NODES == "none" then
		return {}
	end
	local show = run("timeout 10 " .. conf.STRATA_BB_SCONTROL .. " show job -o " .. sh_quote(job_id))
	local list = nil
	for _, field in ipairs({ "ReqNodeList", "SchedNodeList" }) do
		local v = show:match("%f[%w]" .. field .. "=(%S+)")
		if v and v ~= "(null)" and v ~= "" then
			list = v
			break
		end
	end
	local nodes = {}
	if list then
		local names = run("timeout 10 " .. conf.STRATA_BB_SCONTROL .. " show hostnames " .. sh_quote(list))
		for n in names:gmatch("%S+") do
			nodes[#nodes + 1] = n
		end
	end
	return nodes
end

-- The job's hint that is still live (not failed or cancelled), or nil; and an error message
-- when the hooks server could not say.
local function live_hint(conf, job_id)
	local code, doc, why = http(conf, "GET", "/v1/hints?job=" .. urlencode(job_id), nil, "STRATA_BB_REQUEST_TIMEOUT")
	if code ~= 200 then
		return nil, why
	end
	for _, h in ipairs((doc and doc.hints) or {}) do
		if h.state ~= "failed" and h.state ~= "cancelled" then
			return h
		end
	end
	return nil
end

-- Posts the job's hint. When the server knows none of the job's Slurm nodes as an L2 agent's
-- node, the hint is posted again for any agent: naming differs between sites, and a staged
-- copy on another node's agent still saves the read from L3.
local function submit(conf, job_id, spec, nodes)
	local fields = { '"job":' .. json_string(job_id), '"paths":' .. json_list(spec.paths) }
	if spec.deadline then
		fields[#fields + 1] = '"deadline":' .. json_string(spec.deadline)
	end
	if spec.priority then
		fields[#fields + 1] = '"priority":' .. spec.priority
	end
	if spec.qos then
		fields[#fields + 1] = '"qos":' .. json_string(spec.qos)
	end
	if #nodes > 0 then
		fields[#fields + 1] = '"nodes":' .. json_list(nodes)
	end
	local code, doc, why = http(conf, "POST", "/v1/hints", "{" .. table.concat(fields, ",") .. "}", "STRATA_BB_SUBMIT_TIMEOUT")
	if code == 400 and #nodes > 0 and tostring(doc and doc.error):match("^nodes%[") then
		info("job %s: %s; staging on any L2 agent instead", job_id, tostring(doc.error))
		return submit(conf, job_id, spec, {})
	end
	if code ~= 201 then
		return nil, why
	end
	return doc
end

local function progress(h)
	local total, done = tonumber(h.bytes_total) or 0, tonumber(h.bytes_done) or 0
	local pct = total > 0 and math.floor(100 * done / total) or 0
	local eta = h.eta_seconds and string.format(", ETA %ds", math.floor(tonumber(h.eta_seconds))) or ""
	return string.format("%s, %d of %d bytes (%d%%)%s", h.state, done, total, pct, eta)
end

---------------------------------------------------------------------------------------------
-- The functions Slurm calls
---------------------------------------------------------------------------------------------

--[[
At submission, synchronously inside slurmctld: only the directive's syntax is checked (no
network). An error rejects the job; sbatch prints the message.
--]]
function slurm_bb_job_process(job_script)
	local conf = load_config()
	local spec, why = read_directives(conf, job_script)
	if why then
		return slurm.ERROR, "strata: " .. why
	end
	return slurm.SUCCESS
end

--[[
Called by slurmctld at start and then periodically; must be quick. Strata's L2 is not a pool
that Slurm should count, so there are none.
--]]
function slurm_bb_pools()
	return slurm.SUCCESS
end

-- Called before data_in while the job is pending; the hint is posted in data_in.
function slurm_bb_setup(job_id, uid, gid, pool, bb_size, job_script)
	return slurm.SUCCESS
end

--[[
Stage-in, while the job is pending, in a separate process (bounded by StageInTimeout): posts the
job's hint (or finds it again after a slurmctld restart) and waits for it as described at the
top. Returning an error holds the job with the message as its reason.
--]]
function slurm_bb_data_in(job_id, job_script)
	local conf = load_config()
	local spec, why = read_directives(conf, job_script)
	if why then
		return slurm.ERROR, "strata: " .. why
	end
	if not spec then
		return slurm.SUCCESS
	end

	local hint
	hint, why = live_hint(conf, job_id)
	if why then
		err("job %s: %s", job_id, why)
		return slurm.ERROR, "strata: " .. why
	end
	if hint then
		info("job %s: found its hint %s (%s)", job_id, hint.id, progress(hint))
	else
		local nodes = job_nodes(conf, job_id)
		hint, why = submit(conf, job_id, spec, nodes)
		if not hint then
			err("job %s: %s", job_id, why)
			return slurm.ERROR, "strata: " .. why
		end
		info("job %s: hint %s for %s%s: %d files, %d bytes", job_id, hint.id, table.concat(spec.paths, " "),
			#(hint.nodes or {}) > 0 and (" on " .. table.concat(hint.nodes, ",")) or "",
			tonumber(hint.files) or 0, tonumber(hint.bytes_total) or 0)
	end

	local max_wait = setting_seconds(conf, "STRATA_BB_MAX_WAIT")
	local poll = math.max(1, setting_seconds(conf, "STRATA_BB_POLL"))
	local started, logged = os.time(), os.time()
	while true do
		if hint.state == "ready" then
			info("job %s: hint %s is ready after %ds; the job may start", job_id, hint.id, os.time() - started)
			return slurm.SUCCESS
		elseif hint.state == "failed" or hint.state == "cancelled" then
			local msg = string.format("hint %s %s: %s", hint.id, hint.state, tostring(hint.message or ""))
			err("job %s: %s", job_id, msg)
			return slurm.ERROR, "strata: " .. msg
		end
		if os.time() - started >= max_wait then
			info("job %s: starts at-risk after waiting %ds (STRATA_BB_MAX_WAIT): hint %s is %s",
				job_id, os.time() - started, hint.id, progress(hint))
			return slurm.SUCCESS
		end
		if os.time() - logged >= 30 then
			info("job %s: waiting for hint %s: %s", job_id, hint.id, progress(hint))
			logged = os.time()
		end
		sleep(poll)
		local code, doc, failure = http(conf, "GET", "/v1/hints/" .. urlencode(hint.id), nil, "STRATA_BB_REQUEST_TIMEOUT")
		if code == 200 and doc then
			hint = doc
		elseif code == 404 then
			local msg = string.format("hint %s is gone (its job was ended?)", hint.id)
			err("job %s: %s", job_id, msg)
			return slurm.ERROR, "strata: " .. msg
		else
			-- the hooks server restarting, say: keep the last state and ask again
			err("job %s: %s", job_id, tostring(failure))
		end
	end
end

-- Only called when the job asked for a pool, which this script does not offer.
function slurm_bb_real_size(job_id)
	return slurm.SUCCESS
end

--[[
When the job is scheduled, synchronously inside slurmctld: must be quick. Lines written to
path_file join the job's environment; the job can then ask about its hints itself.
--]]
function slurm_bb_paths(job_id, job_script, path_file)
	local conf = load_config()
	local f = io.open(path_file, "a")
	if f then
		f:write("STRATA_HOOKS=" .. base_url(conf) .. "\n")
		if ca_file(conf) then
			f:write("STRATA_HOOKS_CA=" .. ca_file(conf) .. "\n")
		end
		f:close()
	end
	return slurm.SUCCESS
end

-- Before the job runs, after data_in: nothing more to stage.
function slurm_bb_pre_run(job_id, job_script)
	return slurm.SUCCESS
end

-- After the job: Strata writes through its own tiers, so there is nothing to stage out.
function slurm_bb_post_run(job_id, job_script)
	return slurm.SUCCESS
end

function slurm_bb_data_out(job_id, job_script)
	return slurm.SUCCESS
end

--[[
After the job ended (or was cancelled, or its stage-in failed with Flags=TeardownFailure): ends
the job's hints, so the agents release what they pinned for it. A job with no hint (404) is
fine. An error makes Slurm retry the teardown a few times.
--]]
function slurm_bb_job_teardown(job_id, job_script, hurry)
	local conf = load_config()
	local spec, why = read_directives(conf, job_script)
	if not spec and not why then
		return slurm.SUCCESS -- no Strata directive: nothing was posted
	end
	local code, doc, failure = http(conf, "POST", "/v1/jobs/" .. urlencode(job_id) .. "/end", "", "STRATA_BB_REQUEST_TIMEOUT")
	if code == 200 then
		info("job %s: ended %d hint(s)", job_id, #((doc and doc.ended) or {}))
		return slurm.SUCCESS
	elseif code == 404 then
		return slurm.SUCCESS
	end
	err("job %s: teardown: %s", job_id, tostring(failure))
	return slurm.ERROR, "strata: " .. tostring(failure)
end

--[[
`scontrol show bbstat [JOBID]`: the hints (of one job), one a line.
--]]
function slurm_bb_get_status(...)
	local conf = load_config()
	local args = { ... }
	local path = "/v1/hints"
	if args[1] then
		path = path .. "?job=" .. urlencode(args[1])
	end
	local code, doc, why = http(conf, "GET", path, nil, "STRATA_BB_REQUEST_TIMEOUT")
	if code ~= 200 then
		return slurm.SUCCESS, "strata: " .. tostring(why) .. "\n"
	end
	local out = { string.format("%-8s %-12s %s", "HINT", "JOB", "STATE") }
	for _, h in ipairs((doc and doc.hints) or {}) do
		out[#out + 1] = string.format("%-8s %-12s %s", tostring(h.id), tostring(h.job), progress(h))
	end
	return slurm.SUCCESS, table.concat(out, "\n") .. "\n"
end
