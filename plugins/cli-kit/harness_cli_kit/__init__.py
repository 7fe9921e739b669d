"""harness_cli_kit: the shared floor of harness_core's subprocess CLI adapters.

Each adapter keeps only what is its CLI's own (argv, config files, the mapping of its native
events); this package holds the rest: finding the binary (:mod:`.locate`), the native session id
under ``state_dir`` (:mod:`.state`) and where each turn ended in the CLI's conversation
(:mod:`.branches`), the endpoint probe (:mod:`.endpoint`), the JSON-lines stream
base (:mod:`.stream`), safe names and prompts (:mod:`.safe`), common session settings
(:mod:`.settings`), the offline conformance profile (:mod:`.conformance`), and for test suites
:mod:`.testing` and the pytest plugin :mod:`.pytest_fixtures`. It depends on the contract
(``harness_hookspecs``) and anyio only.
"""

from .branches import Branches
from .classify import auth_hint
from .describe import (
    CLI_CONFIG_PROPERTIES,
    COMMAND_PROPERTY,
    cli_descriptor,
    config_schema,
    local_descriptor,
)
from .endpoint import endpoint_reachable, preflight
from .locate import (
    CLI_PATH_ENV,
    check_cli,
    cli_details,
    command_of,
    find_cli,
    located,
    located_command,
    not_found,
    require_cli,
    version_sync,
    version_via,
)
from .mcp import bridge_of, claude_mcp_config, codex_mcp_toml, opencode_mcp
from .safe import safe_id, safe_name, safe_prompt
from .settings import api_key, base_url, extra_env, int_setting, require_workspace
from .state import NativeSession, Sessions
from .steps import ModelSteps, Thinking
from .stream import JsonLinesStream, count, json_object, positive_cost, usage_of, usage_report

__all__ = [
    "CLI_CONFIG_PROPERTIES",
    "CLI_PATH_ENV",
    "COMMAND_PROPERTY",
    "Branches",
    "JsonLinesStream",
    "ModelSteps",
    "NativeSession",
    "Sessions",
    "Thinking",
    "api_key",
    "auth_hint",
    "base_url",
    "bridge_of",
    "check_cli",
    "claude_mcp_config",
    "cli_descriptor",
    "cli_details",
    "codex_mcp_toml",
    "command_of",
    "config_schema",
    "count",
    "endpoint_reachable",
    "extra_env",
    "find_cli",
    "int_setting",
    "json_object",
    "local_descriptor",
    "located",
    "located_command",
    "not_found",
    "opencode_mcp",
    "positive_cost",
    "preflight",
    "require_cli",
    "require_workspace",
    "safe_id",
    "safe_name",
    "safe_prompt",
    "usage_of",
    "usage_report",
    "version_sync",
    "version_via",
]
