"""Typed settings for mongocdc: the property registry, loading and validation, redaction.

Standard library and PyYAML only. Typical use::

    settings = load_settings(config_path, os.environ, {"topic.prefix": "inventory"})
    settings.require("topic.prefix")
    settings.kafka_client            # librdkafka configuration
    settings.as_properties()         # for `mongocdc config show`, secrets redacted
"""

from __future__ import annotations

from mongocdc.config.loading import (
    CONFIG_FILE_ENV_VAR,
    ENV_VARS,
    NON_SETTING_ENV_VARS,
    TEST_ENV_PREFIX,
    check_librdkafka_key,
    is_known_property,
    load_settings,
    parse_offsets_spec,
)
from mongocdc.config.namespaces import SYSTEM_DATABASES
from mongocdc.config.properties import (
    ENV_PREFIX,
    CaptureMode,
    CaptureScope,
    OffsetStorage,
    Property,
    SnapshotMode,
    env_var_for,
)
from mongocdc.config.redaction import REDACTED, is_secret_key, redact_text, redact_uri, redact_value
from mongocdc.config.reference import render_compat_markdown, render_reference_markdown
from mongocdc.config.settings import KAFKA_PREFIX, PROPERTIES, Settings

__all__ = [
    "CONFIG_FILE_ENV_VAR",
    "ENV_PREFIX",
    "ENV_VARS",
    "KAFKA_PREFIX",
    "NON_SETTING_ENV_VARS",
    "PROPERTIES",
    "REDACTED",
    "SYSTEM_DATABASES",
    "TEST_ENV_PREFIX",
    "CaptureMode",
    "CaptureScope",
    "OffsetStorage",
    "Property",
    "Settings",
    "SnapshotMode",
    "check_librdkafka_key",
    "env_var_for",
    "is_known_property",
    "is_secret_key",
    "load_settings",
    "parse_offsets_spec",
    "redact_text",
    "redact_uri",
    "redact_value",
    "render_compat_markdown",
    "render_reference_markdown",
]
