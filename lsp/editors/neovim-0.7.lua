-- rulekit language server, Neovim 0.7 - 0.10 (no plugins needed)
vim.cmd([[autocmd BufRead,BufNewFile *.rule setfiletype rulekit]])
vim.api.nvim_create_autocmd("FileType", {
  pattern = { "rulekit", "toml", "python" },
  callback = function(args)
    local root = vim.fn.getcwd()
    local config = { name = "rulekit", cmd = { "rulekit", "lsp" }, root_dir = root }
    if vim.lsp.start then                      -- 0.8+
      vim.lsp.start(config)
    else                                       -- 0.7
      _G.rulekit_client = _G.rulekit_client or vim.lsp.start_client(config)
      vim.lsp.buf_attach_client(args.buf, _G.rulekit_client)
    end
  end,
})
