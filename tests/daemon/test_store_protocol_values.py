"""The store's enums and the protocol's Literals name the same values: ``daemon.api.views`` casts
one to the other, so a value added to one side only must fail here, not on a client."""

import typing

import pytest

import storage
from daemon.api import protocol


@pytest.mark.parametrize("enum, literal", [
    (storage.JobKind, protocol.JobKind),
    (storage.JobState, protocol.JobState),
    (storage.Severity, protocol.Severity),
    (storage.FindingState, protocol.FindingState),
    (storage.ChangeState, protocol.ChangeState),
], ids=["JobKind", "JobState", "Severity", "FindingState", "ChangeState"])
def test_every_store_enum_names_exactly_the_values_of_its_protocol_literal(enum, literal):
    assert sorted(member.value for member in enum) == sorted(typing.get_args(literal))
