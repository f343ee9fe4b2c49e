"""The team server's parts that are not HTTP: its configuration, the job queue (procrastinate on
PostgreSQL), job events between machines (LISTEN/NOTIFY), people and their tokens, and the
repository cache on a worker. The processes are :mod:`daemon.service.team` (``troupe server``)
and :mod:`daemon.service.worker` (``troupe worker``); the HTTP edge is :mod:`daemon.api.team`."""
