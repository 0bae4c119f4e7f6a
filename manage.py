#!/usr/bin/env python
"""Django's command-line utility for Rebalance Lab (``python manage.py serve``)."""

import asyncio
import os
import sys

import uvloop


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    # Every loop a command makes is uvloop's, Daphne's among them (it makes its loop when
    # django.setup() imports it, hence here, first): `serve` spends its time in the loop, and
    # uvloop takes ~15% off the server CPU of 500 consumers joining (bench/ws_join.py).
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
