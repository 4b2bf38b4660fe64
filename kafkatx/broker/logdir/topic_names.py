"""Topic names as Kafka's ``org.apache.kafka.common.internals.Topic`` judges them: which
names are legal (``Topic#validate``) and which collide ('.' and '_' are the same in metric
names: ``Topic#hasCollision``), checked on every path that creates a topic."""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_NAME_LENGTH = 249  # Topic.MAX_NAME_LENGTH
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> str | None:
    """``Topic#validate``: why ``name`` is not a legal topic name (None when it is)."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_NAME_LENGTH:
        return (f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
                f"topic name: {name}")
    if not _LEGAL_TOPIC.fullmatch(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than ASCII "
                "alphanumerics, '.', '_' and '-'")
    return None


def unify_collision_chars(name: str) -> str:
    """``Topic#unifyCollisionChars``: '.' and '_' collide in metric names."""
    return name.replace(".", "_")


def collision_problem(name: str, existing: Iterable[str]) -> str | None:
    """``ReplicationControlManager#validateNewTopicNames``: why ``name`` may not be created
    beside ``existing`` (another name equal to it once '.' and '_' are unified), else None.
    Checked on every creation path: CreateTopics, Metadata auto-creation, internal topics."""
    unified = unify_collision_chars(name)
    for other in existing:
        if other != name and unify_collision_chars(other) == unified:
            return f"Topic '{name}' collides with existing topic: {other}"
    return None
