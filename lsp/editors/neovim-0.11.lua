-- rulekit language server, Neovim 0.11+
vim.filetype.add({ extension = { rule = "rulekit" } })
vim.lsp.config("rulekit", {
  cmd = { "rulekit", "lsp" },
  filetypes = { "rulekit", "toml", "python" },
  root_markers = { "pyproject.toml", ".git" },
  init_options = { debounceMs = 200 },   -- optional: see "Settings"
})
vim.lsp.enable("rulekit")
