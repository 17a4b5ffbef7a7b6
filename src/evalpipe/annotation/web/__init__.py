"""The annotation web app.

``create_app(Store(path), AppConfig(secret_key=...))`` builds the Flask app; ``evalpipe
annotate serve`` runs it under waitress. See docs/annotation-web.md.
"""

from evalpipe.annotation.web.app import AppConfig, create_app
from evalpipe.annotation.web.store import Store

__all__ = ["AppConfig", "Store", "create_app"]
