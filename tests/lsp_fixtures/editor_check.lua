-- Loaded after a README editor config: wait for the server's diagnostics, print them, exit 0/1.
local ok = vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 50)
for _, d in ipairs(vim.diagnostic.get(0)) do
  io.stdout:write(string.format("DIAG %d:%d %s %s\n", d.lnum + 1, d.col + 1, tostring(d.code), d.message))
end
io.stdout:write("filetype=" .. vim.bo.filetype .. "\n")
vim.cmd(ok and "qall!" or "cquit 1")
