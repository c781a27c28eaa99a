"""The typer application object every CLI command module registers on."""
import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="rulekit: rules for failure attribution of distributed GPU jobs.")


@app.callback()
def _root() -> None:
    """rulekit: rules for failure attribution of distributed GPU jobs."""
