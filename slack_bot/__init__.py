"""The Troupe Slack bot: mention the team in a channel, follow it in the thread, answer its
questions, apply its work with a button. A thin adapter over :mod:`daemon.client`.

Run it with ``troupe slack`` (Socket Mode) or ``troupe slack --http --port N`` (Events API at
``/slack/events``); ``python -m slack_bot`` takes the same options. See :mod:`slack_bot.config`
for the settings.
"""
