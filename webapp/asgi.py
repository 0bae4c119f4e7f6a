"""The ASGI application Daphne serves: HTTP to Django, websockets to the Channels routes. It
refuses to load without a secret key (``webapp.secret_key``).

Daphne runs no ASGI lifespan events, so nothing here starts the coordinator runtime: the
first websocket connect or API request starts it
(``webapp.runtime.coordinator_runtime.get_runtime``), or ``manage.py serve`` starts it eagerly
on the same event loop.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

from django.core.asgi import get_asgi_application

# Django first: the routes below import models.
django_asgi_app = get_asgi_application()

from webapp import secret_key  # noqa: E402

secret_key.require()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from webapp.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": URLRouter(websocket_urlpatterns),
    }
)
