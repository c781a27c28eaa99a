;; rulekit language server with eglot (built into Emacs 29+; Emacs 28: apt install elpa-eglot).
;; Tried: Emacs 28.2 + eglot 1.9 (Debian bookworm), batch mode.
(require 'eglot)
(define-derived-mode rulekit-mode prog-mode "rulekit"
  "Major mode for rulekit .rule files."
  (setq-local comment-start "# "))
(add-to-list 'auto-mode-alist '("\\.rule\\'" . rulekit-mode))
(add-to-list 'eglot-server-programs
             '((rulekit-mode conf-toml-mode toml-ts-mode) . ("rulekit" "lsp")))
(add-hook 'rulekit-mode-hook #'eglot-ensure)
;; TOML rule files too (the server ignores TOML files that hold no rules):
(add-hook 'conf-toml-mode-hook #'eglot-ensure)
