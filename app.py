"""Entry point: ``python app.py`` serves CYOA; ``app:app`` is the WSGI app for gunicorn.

It serves on ``CYOA_HOST`` (default 127.0.0.1) and ``CYOA_PORT`` (default 5000); the command
line (``flask --app app cyoa VERB``) is registered here.
"""

import logging

from cyoa import create_app
from cyoa.cli import cli
from cyoa.cli.setup import participant_links, serving_url
from cyoa.database_url import DatabaseSettingError
from cyoa.web.realtime import socketio

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
try:
    app = create_app()
except DatabaseSettingError as error:
    raise SystemExit(str(error)) from None
app.cli.add_command(cli)


def main() -> None:
    base = serving_url(app)
    print(f"\nCYOA is starting on {base}")
    print(f"Writers' links (default study: {app.config['DEFAULT_EXPERIMENT']}):")
    for line in participant_links(app, base):
        print(line)
    print(f"Researchers: {base}/research/ (first account: python -m cyoa create-researcher NAME)")
    print("The models load in the background; suggestions start as soon as they are ready.\n")
    # The threading server suits one machine; see docs/deployment.md for gunicorn.
    socketio.run(
        app, host=app.config["HOST"], port=int(app.config["PORT"]), allow_unsafe_werkzeug=True
    )


if __name__ == "__main__":
    main()
