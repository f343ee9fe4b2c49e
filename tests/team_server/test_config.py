"""The team config: what a server and a worker read, and the mistakes it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.config import ConfigError
from daemon.team_server.config import load_team_config


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "team.toml"
    path.write_text(text)
    return path


def test_the_team_config_maps_workspaces_and_channels_to_remotes(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TROUPE_STORE_URL", raising=False)
    monkeypatch.delenv("TROUPE_QUEUE_URL", raising=False)
    config = load_team_config(_config(tmp_path, '[store]\nurl = "postgresql://t@db/troupe"\n[worker]\nconcurrency = 3\n'
                                                '[[workspace]]\nname = "shop"\nremote = "/srv/shop.git"\n'
                                                'channel = "C1"\nshared_with = ["ada"]\n'))
    assert (config.queue_url, config.concurrency) == ("postgresql://t@db/troupe", 3)
    shop = config.workspace("/team/shop")
    assert shop is not None and shop == config.workspace("shop") == config.for_channel("C1")
    assert (shop.root, shop.remote, shop.shared_with) == ("/team/shop", "/srv/shop.git", ("ada",))
    monkeypatch.setenv("TROUPE_STORE_URL", "postgresql://t@other/troupe")
    assert load_team_config(tmp_path / "team.toml").queue_url == "postgresql://t@other/troupe"


@pytest.mark.parametrize(("text", "says"), [
    ("", "say where the team's store is"),
    ('[store]\nurl = "/var/lib/troupe.db"\n', "needs PostgreSQL"),
    ('[store]\nurl = "postgresql://db/t"\n[[workspace]]\nname = "shop"\n', 'remote = "<git URL or path>"'),
    ('[store]\nurl = "postgresql://db/t"\n[[workspace]]\nname = "../up"\nremote = "x"\n', "must be letters"),
    ('[store]\nurl = "postgresql://db/t"\n[worker]\nconcurrency = "two"\n', "[worker].concurrency must be int"),
    ("[store\n", "is not valid TOML"),
])
def test_a_wrong_team_config_says_what_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                                             says: str) -> None:
    monkeypatch.delenv("TROUPE_STORE_URL", raising=False)
    monkeypatch.delenv("TROUPE_QUEUE_URL", raising=False)
    with pytest.raises(ConfigError) as caught:
        load_team_config(_config(tmp_path, text)).queue_url  # noqa: B018 - the URL is checked when read
    assert says in str(caught.value)
