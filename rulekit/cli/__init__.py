"""The `rulekit` command line: a thin layer that renders what the core returns.

Each command lives in its own module and registers itself on `app`."""
from rulekit.cli.app import app

# command modules (each does `@app.command(...)`)
from rulekit.cli import attribute as _attribute  # noqa: F401,E402
from rulekit.cli import serve as _serve  # noqa: F401,E402
from rulekit.cli import check as _check  # noqa: F401,E402
from rulekit.cli import explain as _explain  # noqa: F401,E402
from rulekit.cli import test as _test  # noqa: F401,E402
from rulekit.cli import lint as _lint  # noqa: F401,E402
from rulekit.cli import fmt as _fmt  # noqa: F401,E402
from rulekit.cli import convert as _convert  # noqa: F401,E402
from rulekit.cli import lsp as _lsp  # noqa: F401,E402
from rulekit.cli import blueprint as _blueprint  # noqa: F401,E402


def main() -> None:
    app()
