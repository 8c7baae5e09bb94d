"""One exception type for user-facing input errors.

Raised before any compute; the CLI prints its message as a single line and exits 2.
"""


class ConfigError(ValueError):
    """Bad configuration or input file. The message names the offending key or path."""


def choice_error(key: str, value, allowed) -> ConfigError:
    allowed = ", ".join(sorted(map(str, allowed)))
    return ConfigError(f"{key}: unknown value {value!r}; allowed: {allowed}")


class OutputError(ConfigError):
    """An output could not be written (a full disk): the message names the file. A ConfigError, so every entry
    point prints it as the same single line."""
