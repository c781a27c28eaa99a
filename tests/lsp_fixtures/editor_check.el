;; Loaded after lsp/editors/rulekit-eglot.el: wait for Flymake diagnostics from eglot, print them, exit 0/1.
(let ((buf (find-file-noselect (expand-file-name (car command-line-args-left)))))
  (setq command-line-args-left nil)
  (with-current-buffer buf
    ;; eglot-ensure defers the start to the next command, which batch mode never runs:
    ;; start it the way the command would, from the configured `eglot-server-programs'
    (unless (eglot-current-server)
      (apply #'eglot (eglot--guess-contact)))
    (flymake-start)   ; batch mode runs no idle timers
    (let ((deadline (+ (float-time) 20)))
      (while (and (null (flymake-diagnostics)) (< (float-time) deadline))
        (accept-process-output nil 0.1)))
    (dolist (d (flymake-diagnostics))
      (princ (format "DIAG line %d: %s\n" (line-number-at-pos (flymake-diagnostic-beg d)) (flymake-diagnostic-text d))))
    (princ (format "mode=%s\n" major-mode))
    (let ((ok (flymake-diagnostics)))
      (when (eglot-current-server) (eglot-shutdown (eglot-current-server)))
      (kill-emacs (if ok 0 1)))))
