-- Headless Neovim (0.7+) driving `rulekit lsp` with its built-in LSP client.
-- Usage: RULEKIT_LS_CMD="python -m rulekit_lsp.server" nvim --headless --clean -u NONE -c "luafile nvim_probe.lua" FILE
-- Prints DIAG / HOVER / LENS / COMMAND / DEF lines; exits 1 on the first failure.
local function out(msg) io.stdout:write(msg .. "\n") end
local function fail(msg) out("FAIL: " .. msg); vim.cmd("cquit 1") end

local cmd = vim.split(os.getenv("RULEKIT_LS_CMD"), " ", { trimempty = true })
local bufnr = vim.api.nvim_get_current_buf()
local config = {
  name = "rulekit", cmd = cmd, root_dir = os.getenv("RULEKIT_ROOT") or vim.fn.getcwd(),
  handlers = { ["window/showMessage"] = function(_, result) out("showMessage: " .. result.message) end },
}
local client_id
if vim.lsp.start then
  client_id = vim.lsp.start(config, { bufnr = bufnr })
else
  client_id = vim.lsp.start_client(config)
  vim.lsp.buf_attach_client(bufnr, client_id)
end
if not client_id then fail("client did not start") end

local ok = vim.wait(20000, function() return #vim.diagnostic.get(bufnr) > 0 end, 50)
if not ok then fail("no diagnostics within 20 s") end
for _, d in ipairs(vim.diagnostic.get(bufnr)) do
  out(string.format("DIAG %d:%d %s %s", d.lnum + 1, d.col + 1, tostring(d.code), d.message))
end

local client = vim.lsp.get_client_by_id(client_id)
local td = { uri = vim.uri_from_bufnr(bufnr) }
local hover_line = tonumber(os.getenv("HOVER_LINE")) - 1
local res = client.request_sync("textDocument/hover", { textDocument = td, position = { line = hover_line, character = 10 } }, 10000, bufnr)
if not (res and res.result) then fail("hover: " .. vim.inspect(res)) end
out("HOVER " .. res.result.contents.value:gsub("\n", " | "))

res = client.request_sync("textDocument/definition", { textDocument = td, position = { line = tonumber(os.getenv("DEF_LINE")) - 1, character = tonumber(os.getenv("DEF_CHAR")) } }, 10000, bufnr)
if not (res and res.result and #res.result > 0) then fail("definition: " .. vim.inspect(res)) end
out(string.format("DEF %s:%d", res.result[1].uri, res.result[1].range.start.line + 1))

res = client.request_sync("textDocument/codeLens", { textDocument = td }, 10000, bufnr)
if not (res and res.result and #res.result > 0) then fail("codeLens: " .. vim.inspect(res)) end
out("LENS " .. res.result[1].command.title)
local c = res.result[1].command
res = client.request_sync("workspace/executeCommand", { command = c.command, arguments = c.arguments }, 30000, bufnr)
if not (res and res.result) then fail("executeCommand: " .. vim.inspect(res)) end
out(string.format("COMMAND passed=%d failed=%d total=%d", res.result.passed, res.result.failed, res.result.total))

client.stop()
vim.wait(3000, function() return client.is_stopped() end, 50)
vim.cmd("qall!")
