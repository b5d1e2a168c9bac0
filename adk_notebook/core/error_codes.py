"""Every `AdkError.code`, with when it happens and what to do.

`code` is the stable, machine-readable half of an error: `category` says what kind of failure
it is (and whether a retry can help), `code` which case, `message` the details. Tool errors the
model reads (`{"error": ..., "code": ...}` in a function response) use the same codes; those
marked "(tool response)" appear only there. Besides these members, a provider's HTTP failure
has the code `http_<status>` (e.g. `http_404`, `http_429`).

```python
try:
    agent.run("...")
except AdkError as e:
    if e.code == ErrorCode.MISSING_API_KEY:
        ...
print(ErrorCode.MISSING_API_KEY.doc)
```
docs/errors.md lists them all; tests/test_error_codes.py finds every code the package can
produce in its source and fails for one that is not listed here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self

__all__ = ["HTTP_STATUS_PREFIX", "ErrorCode"]

# A provider answered with an HTTP error status: the code is this prefix and the status.
HTTP_STATUS_PREFIX = "http_"


class ErrorCode(StrEnum):
    """A case of `AdkError`; `doc` says when it happens and what to do."""

    doc: str

    def __new__(cls, value: str, doc: str) -> Self:
        member = str.__new__(cls, value)
        member._value_ = value
        member.doc = doc
        return member

    # Short forms: the code of AdkError.agent(...), .tool(...) and friends when none is given.
    AGENT_ERROR = (
        "agent_error",
        "An agent failed in a way no more specific code covers. Read the message.",
    )
    TOOL_ERROR = (
        "tool_error",
        "A tool raised AdkError.tool(...) without a code of its own. Read the message.",
    )
    MODEL_ERROR = (
        "model_error",
        "A model failed in a way no more specific code covers. Read the message.",
    )
    SESSION_ERROR = (
        "session_error",
        "A session service failed in a way no more specific code covers. Read the message.",
    )
    ARTIFACT_ERROR = (
        "artifact_error",
        "An artifact service failed in a way no more specific code covers. Read the message.",
    )
    CONFIG_ERROR = (
        "config_error",
        "A setting is wrong in a way no more specific code covers. Read the message and fix the setting.",
    )

    # Agents and runs
    CONFLICTING_OPTIONS = (
        "conflicting_options",
        "Two options that each choose the same thing were given together (e.g. provider= and api_key=). Pass one of them.",
    )
    INVALID_AGENT_CONFIG = (
        "invalid_agent_config",
        "An agent was given an argument it cannot use (the message names it). Fix the argument.",
    )
    AGENT_HAS_PARENT = (
        "agent_has_parent",
        "An agent was given as a sub-agent of a second parent; an agent has one parent. Make another agent for the second place.",
    )
    DUPLICATE_AGENT_NAME = (
        "duplicate_agent_name",
        "Two agents of one agent tree have the same name (transfers and events name agents). Rename one of them.",
    )
    UNKNOWN_AGENT = (
        "unknown_agent",
        "A transfer named an agent that is not one of the caller's transfer targets (its sub-agents, parent, peers). Use one of the names the message lists.",
    )
    INVALID_MAP_ITEMS = (
        "invalid_map_items",
        "A MapAgent's items_key is missing from the state or is not a list. Set state[items_key] to a list before the MapAgent runs.",
    )
    INVALID_CALLBACK_RESULT = (
        "invalid_callback_result",
        "An agent callback returned something other than Content, str or None. Return one of those.",
    )
    INVALID_PLUGIN = (
        "invalid_plugin",
        "Something in plugins= is not a Plugin. Pass instances of Plugin subclasses (OpenTelemetryPlugin(), ...).",
    )
    INVALID_TRACE_FILE = (
        "invalid_trace_file",
        "A line of a trace file is not a trace: cut short, not JSON, or a field of the wrong type, such as a "
        "start that is not a number (the message names the file, the line and the field). "
        "Read files JsonlTraceExporter wrote, or remove the broken line.",
    )
    INVALID_STRATEGY = (
        "invalid_strategy",
        "tool_execution_strategy is not SEQUENTIAL, PARALLEL or AUTO. Pass a ToolExecutionStrategy.",
    )
    INVALID_RETRY_BUDGET = (
        "invalid_retry_budget",
        "A RetryBudget has max_retries or delay below 0. Pass values >= 0.",
    )
    INVALID_OUTPUT_SCHEMA = (
        "invalid_output_schema",
        "output_schema is neither a pydantic model class nor a JSON-schema dict. Pass one of those.",
    )
    MISSING_TEMPLATE_VARIABLE = (
        "missing_template_variable",
        "The instruction names {var} and the session state has no such key. Set the state key, or write {var?} to allow it to be missing.",
    )
    MISSING_TEMPLATE_ARTIFACT = (
        "missing_template_artifact",
        "The instruction names {artifact.name} and there is no such artifact. Save it first, or leave it out.",
    )
    NO_MODEL = (
        "no_model",
        "The agent has no model. Pass model= (an Llm or a model string such as 'gemini-2.5-flash').",
    )
    NO_ARTIFACT_SERVICE = (
        "no_artifact_service",
        "A tool or callback used artifacts, and the Runner has none. Pass artifact_service= to the Runner.",
    )
    NO_RESPONSE = (
        "no_response",
        "The model ended its answer without any content. Run again; if it persists, check the model.",
    )
    MAX_ITERATIONS_EXCEEDED = (
        "max_iterations_exceeded",
        "The agent called the model max_iterations times without a final answer. Raise max_iterations, or make the tools end the task.",
    )
    MAX_LLM_CALLS_EXCEEDED = (
        "max_llm_calls_exceeded",
        "The run made RunConfig(max_llm_calls=...) model calls, counted over all its agents (loops, transfers, agents used as tools), and needed another. Raise max_llm_calls, or give the loop or the transfers an end.",
    )
    MAX_TRANSFERS_EXCEEDED = (
        "max_transfers_exceeded",
        "Agents handed the conversation to each other RunConfig(max_transfers=...) times in one run (100 by default) and tried once more. Tell them when to answer instead of transferring, or raise max_transfers.",
    )
    AGENT_TOOL_TOO_DEEP = (
        "agent_tool_too_deep",
        "(tool response) Agents used as tools (AgentTool) were already nested 16 deep, so an agent keeps reaching itself through AgentTool; the call was not made. The model is told to answer without it.",
    )
    OUTPUT_SCHEMA_MISMATCH = (
        "output_schema_mismatch",
        "The final answer still did not fit output_schema after output_max_retries attempts; the message says why. Make the schema simpler or the instruction clearer.",
    )
    RUN_TIME_LIMIT = (
        "run_time_limit",
        "The run took longer than RunConfig(time_limit=...) and was stopped; calls it had started are answered as cancelled. Raise time_limit.",
    )
    INTERRUPTED = (
        "interrupted",
        "(tool response) An earlier run ended before this tool call finished, so its result is unknown. The model may call the tool again.",
    )
    RUN_FAILED = (
        "run_failed",
        "(tool response) The run failed before this tool call finished, so its result is unknown.",
    )
    CANCELLED = (
        "cancelled",
        "(tool response) The call was cancelled (Stop, an interrupt or a timeout of the run) before it finished.",
    )

    # Tools
    INVALID_TOOL = (
        "invalid_tool",
        "A FunctionTool got neither or both of handler and execute. Pass exactly one function.",
    )
    INVALID_TOOL_NAME = (
        "invalid_tool_name",
        "A tool name is not one providers accept (letters, digits, '_' and '-', at most 64). Rename the tool.",
    )
    INVALID_TOOL_PREFIX = (
        "invalid_tool_prefix",
        "A PrefixedToolset prefix is not valid in a tool name. Start it with a letter or '_' and use only letters, digits, '_' or '-'.",
    )
    DUPLICATE_TOOL_NAME = (
        "duplicate_tool_name",
        "Two of an agent's tools (or toolsets) have the same name. Rename one, or wrap a toolset in PrefixedToolset.",
    )
    INVALID_TIMEOUT = (
        "invalid_timeout",
        "A timeout is not a number of seconds above 0 (or None). Pass such a number.",
    )
    INVALID_SCHEMA = (
        "invalid_schema",
        "A JSON-schema dict (tool parameters, output schema) is not valid JSON Schema; the message names where. Fix the schema.",
    )
    INVALID_ARGUMENTS = (
        "invalid_arguments",
        "(tool response) The model's arguments do not fit the tool's schema. The model reads which ones and can call again.",
    )
    UNKNOWN_TOOL = (
        "unknown_tool",
        "(tool response) The model called a tool the agent does not have. The model reads the available names.",
    )
    MISSING_SCOPES = (
        "missing_scopes",
        "(tool response) The tool needs scopes the run was not granted. Grant them in the run's context, or do not offer the tool.",
    )
    CIRCUIT_OPEN = (
        "circuit_open",
        "(tool response) The tool failed too many times in a row and is off for the rest of the run (circuit_breaker_threshold).",
    )
    CALLBACK_ERROR = (
        "callback_error",
        "(tool response) A before- or after-tool callback raised; the message names it. Fix the callback.",
    )
    TOOL_EXCEPTION = (
        "tool_exception",
        "(tool response) The tool raised an exception; the model reads its type and message.",
    )
    TOOL_TIMEOUT = (
        "tool_timeout",
        "(tool response) The tool took longer than its timeout (or the agent's tool_timeout). Raise the timeout or make the tool faster.",
    )
    TOOL_STILL_RUNNING = (
        "tool_still_running",
        "Earlier calls of this tool were cancelled or timed out and still run on their threads; new calls are refused until they end.",
    )
    INVALID_MEDIA = (
        "invalid_media",
        "(tool response) A tool returned inline data or a file reference that cannot be read (bad base64, unknown type). Return bytes, base64 text or a PIL image of a supported type.",
    )
    INLINE_DATA_TOO_LARGE = (
        "inline_data_too_large",
        "(tool response) A tool returned more inline bytes than one response may carry. Return a file reference, or smaller data.",
    )
    RESULT_NOT_SERIALIZABLE = (
        "result_not_serializable",
        "(tool response) A tool returned a value JSON cannot carry. Return str, numbers, bool, None, lists, dicts or pydantic models.",
    )
    INVALID_FILE_URI = (
        "invalid_file_uri",
        "A file reference is empty or not a URI. Give a path or a file:// URI.",
    )
    FILE_URI_REMOTE_HOST = (
        "file_uri_remote_host",
        "A file:// URI names a host; only local files can be read. Give a local path.",
    )
    UNSUPPORTED_URI_SCHEME = (
        "unsupported_uri_scheme",
        "A file reference uses a scheme other than file:// (or a plain path). Give a local file.",
    )
    FILE_OUTSIDE_ALLOWED_ROOT = (
        "file_outside_allowed_root",
        "A file reference points outside the folder the tools may read. Move the file, or widen the allowed folder.",
    )

    # Models and providers
    INVALID_MODEL = (
        "invalid_model",
        "A model is neither an Llm nor a model string, or the string names no model. Write 'provider:model', e.g. 'openai:gpt-4o-mini'.",
    )
    UNKNOWN_MODEL = (
        "unknown_model",
        "A model string names a provider that does not exist. %adk models lists them.",
    )
    NO_MODEL_AVAILABLE = (
        "no_model_available",
        "Model 'auto' found no provider key and no local model. Set GOOGLE_API_KEY, OPENAI_API_KEY or ANTHROPIC_API_KEY, or install the [local] extra.",
    )
    MISSING_API_KEY = (
        "missing_api_key",
        "The provider's API key is not set. Set its environment variable (the message names it) or pass api_key=.",
    )
    MISSING_BASE_URL = (
        "missing_base_url",
        "An OpenAI-compatible provider needs a base_url and has none. Pass base_url= or set OPENAI_BASE_URL / OLLAMA_HOST.",
    )
    INVALID_BASE_URL = (
        "invalid_base_url",
        "A base_url is not an http:// or https:// URL. Fix the URL.",
    )
    INVALID_URL = (
        "invalid_url",
        "A request URL cannot be built from base_url and the model name (one with characters URLs refuse). Check the model name.",
    )
    TIMEOUT = (
        "timeout",
        "The provider did not answer in time. It is retried; if it persists, raise timeout= or check the server.",
    )
    CONNECT_FAILED = (
        "connect_failed",
        "The provider could not be reached. Check base_url and the network.",
    )
    CONNECTION_ERROR = (
        "connection_error",
        "The provider dropped the connection. It is retried; if it persists, check the server.",
    )
    PROXY_REFUSED = (
        "proxy_refused",
        "The HTTP proxy refused the connection to the provider. Not retried: check the proxy settings (HTTPS_PROXY) or its credentials.",
    )
    UNSUPPORTED_PROTOCOL = (
        "unsupported_protocol",
        "The provider's base_url has a scheme httpx cannot speak. Use an http:// or https:// URL.",
    )
    DEADLINE_EXCEEDED = (
        "deadline_exceeded",
        "The whole request, retries and their waits included, ran past its deadline. Raise the deadline or try later.",
    )
    STREAM_INTERRUPTED = (
        "stream_interrupted",
        "A streamed answer ended before it was complete. Run the request again.",
    )
    EVENT_TOO_LARGE = (
        "event_too_large",
        "The provider sent one server-sent event larger than the limit; the stream was stopped. Check the server.",
    )
    INVALID_RESPONSE = (
        "invalid_response",
        "The provider's answer is not in its documented format (the message names the field). Check that base_url points at a server of that kind.",
    )
    EMPTY_RESPONSE = (
        "empty_response",
        "Gemini answered without candidates or content, and gave no reason. Run again or rephrase the prompt.",
    )
    NO_CHOICES = (
        "no_choices",
        "An OpenAI-compatible server answered without choices. Check the server.",
    )
    PROVIDER_ERROR = (
        "provider_error",
        "An OpenAI-compatible server reported an error inside its stream. Read its message.",
    )
    SAFETY_BLOCKED = (
        "safety_blocked",
        "The provider blocked the prompt or the answer for safety. Rephrase the prompt.",
    )
    TRUNCATED_TOOL_CALL = (
        "truncated_tool_call",
        "The model's tool-call arguments were cut off by the token limit. Raise max_output_tokens.",
    )
    UNSUPPORTED_MEDIA = (
        "unsupported_media",
        "The provider cannot receive this media type (the message names it). Send a supported type.",
    )
    SCRIPT_EXHAUSTED = (
        "script_exhausted",
        "A ScriptedModel was asked for more responses than it was given. Add responses to the script.",
    )

    # Provider-native features (ThinkingConfig, built-in tools)
    UNSUPPORTED_BUILTIN_TOOL = (
        "unsupported_builtin_tool",
        "The agent's tools hold a built-in tool its model's API lacks (GoogleSearch() and CodeExecution() are Gemini's, WebSearch() is Claude's); raised when the request is built. Use a model of the provider the message names, or remove the tool.",
    )
    INVALID_THINKING_BUDGET = (
        "invalid_thinking_budget",
        "ThinkingConfig(budget_tokens=...) is not a whole number of 0 or more, or for Claude it is below 1024 or not below max_output_tokens. Pass None, 0 or a budget in range (raise max_output_tokens above it for Claude).",
    )
    THINKING_WITH_FORCED_TOOL = (
        "thinking_with_forced_tool",
        "Claude was asked to think while tool_choice forces a tool ('required' or a tool's name), which its API refuses. Use tool_choice 'auto' or 'none', or turn thinking off with ThinkingConfig(budget_tokens=0).",
    )
    THINKING_WITH_SAMPLING = (
        "thinking_with_sampling",
        "Claude was asked to think with a temperature other than 1 or with top_k set, which its API refuses. Leave temperature and top_k unset, or turn thinking off with ThinkingConfig(budget_tokens=0).",
    )
    INVALID_MAX_USES = (
        "invalid_max_uses",
        "WebSearch(max_uses=...) is not a whole number above 0. Pass one, or None for the provider's default.",
    )

    # Anthropic's error types, passed on as codes.
    INVALID_REQUEST_ERROR = (
        "invalid_request_error",
        "Anthropic refused the request as malformed. Read its message.",
    )
    REQUEST_TOO_LARGE = (
        "request_too_large",
        "Anthropic refused the request as too large. Send less.",
    )
    AUTHENTICATION_ERROR = (
        "authentication_error",
        "Anthropic refused the API key. Check ANTHROPIC_API_KEY.",
    )
    PERMISSION_ERROR = (
        "permission_error",
        "The API key may not use this model or feature. Check the key's access.",
    )
    BILLING_ERROR = (
        "billing_error",
        "Anthropic refused the request for billing reasons. Check the account.",
    )
    NOT_FOUND_ERROR = (
        "not_found_error",
        "Anthropic has no such model or resource. Check the model name.",
    )
    RATE_LIMIT_ERROR = (
        "rate_limit_error",
        "Anthropic's rate limit was reached. It is retried after the wait the server asks for.",
    )
    TIMEOUT_ERROR = "timeout_error", "Anthropic timed out. Run the request again."
    OVERLOADED_ERROR = (
        "overloaded_error",
        "Anthropic is overloaded. It is retried; try later if it persists.",
    )
    API_ERROR = (
        "api_error",
        "Anthropic failed internally (or sent an error type not listed here). Run the request again.",
    )

    # The embedded local model (llama.cpp)
    MODEL_FILE_NOT_FOUND = (
        "model_file_not_found",
        "LocalModel's model_path names no file. Give the path of a GGUF file.",
    )
    MODEL_LOAD_FAILED = (
        "model_load_failed",
        "llama.cpp could not load the model file. Check that it is a GGUF model llama.cpp supports.",
    )
    INVALID_LOCAL_OPTIONS = (
        "invalid_local_options",
        "LocalModel options cannot be sent to its process as JSON. Pass plain values.",
    )
    LOCAL_MODEL_ERROR = (
        "local_model_error",
        "The local model's process reported an error. Read the message; the next run starts it again.",
    )
    LOCAL_MODEL_DIED = (
        "local_model_died",
        "The local model's process ended (a crash in llama.cpp); the run ended, the kernel did not. The next run starts it again.",
    )
    LOCAL_MODEL_CLOSED = (
        "local_model_closed",
        "The local model was closed while a request was running. Run again.",
    )
    CONTEXT_OVERFLOW = (
        "context_overflow",
        "The prompt is longer than the local model's context window. Shorten the conversation (include_contents='none') or raise n_ctx.",
    )

    # Sessions
    SESSION_NOT_FOUND = (
        "session_not_found",
        "No session with that id for that app and user. Create it first.",
    )
    SESSION_EXISTS = (
        "session_exists",
        "A session with that id already exists. Use another id or get the existing one.",
    )
    SESSION_BUSY = (
        "session_busy",
        "Another run is using this session. Wait for it, or use another session.",
    )
    NOT_SERIALIZABLE = (
        "not_serializable",
        "A state value or an event cannot be stored as JSON (the message names the key). Store JSON values only.",
    )
    INVALID_TEXT = (
        "invalid_text",
        "An app name, user id or session id holds half of a UTF-16 surrogate pair, which the SQLite database cannot keep. Pass valid text (the message suggests one).",
    )
    SESSION_SERVICE_CLOSED = (
        "session_service_closed",
        "The session service was closed. Make a new one.",
    )
    SESSION_DB_FOLDER_MISSING = (
        "session_db_folder_missing",
        "The folder of the SQLite file does not exist. Create it or choose another path.",
    )
    SESSION_DB_IS_FOLDER = (
        "session_db_is_folder",
        "The SQLite path is a folder. Give a file path.",
    )
    SESSION_DB_NOT_WRITABLE = (
        "session_db_not_writable",
        "The SQLite file cannot be written. Check its permissions.",
    )
    SESSION_DB_INVALID = (
        "session_db_invalid",
        "The file is not a session database (another SQLite file or not SQLite at all). Choose another path.",
    )
    SESSION_DB_DAMAGED = (
        "session_db_damaged",
        "The session database is damaged. Restore it from a copy, or start a new one.",
    )
    SESSION_DB_TOO_NEW = (
        "session_db_too_new",
        "The session database was written by a newer adk-notebook. Upgrade.",
    )
    SESSION_DB_BUSY = (
        "session_db_busy",
        "The session database stayed locked by another process. Try again.",
    )
    SESSION_DB_ERROR = (
        "session_db_error",
        "The session database failed in another way; the message says how.",
    )

    # MCP
    INVALID_MCP_SERVER = (
        "invalid_mcp_server",
        "StdioServer, HttpServer or McpToolset got an argument it cannot use (the message names it). Fix the argument.",
    )
    UNKNOWN_MCP_TOOL = (
        "unknown_mcp_tool",
        "A tool_filter names a tool the MCP server does not have. The message lists its tools.",
    )
    MCP_COMMAND_NOT_FOUND = (
        "mcp_command_not_found",
        "The MCP server's command is not on PATH nor beside this Python. Install it, or give its full path.",
    )
    MCP_CWD_NOT_FOUND = (
        "mcp_cwd_not_found",
        "The MCP server's cwd does not exist. Create it or fix the path.",
    )
    MCP_CONNECT_TIMEOUT = (
        "mcp_connect_timeout",
        "The MCP server did not finish starting within connect_timeout. Raise it, or check the server's stderr (in the message).",
    )
    MCP_CONNECT_FAILED = (
        "mcp_connect_failed",
        "The MCP server could not be started or reached. The message has its last stderr lines.",
    )
    MCP_SERVER_EXITED = (
        "mcp_server_exited",
        "The MCP server's process ended. The next call starts it again.",
    )
    MCP_CLOSED = (
        "mcp_closed",
        "The MCP connection was closed while a call was running. The next call connects again.",
    )
    MCP_TIMEOUT = (
        "mcp_timeout",
        "An MCP call took longer than the toolset's timeout. Raise timeout= or make the tool faster.",
    )
    MCP_ERROR = (
        "mcp_error",
        "The MCP server answered a call with a protocol error. Read its message.",
    )
    MCP_TOOL_ERROR = (
        "mcp_tool_error",
        "(tool response) The MCP tool reported an error result; the model reads it.",
    )
    MCP_LIST_TIMEOUT = (
        "mcp_list_timeout",
        "The MCP server did not list its tools within the toolset's timeout. A run goes on without them; fix the server or raise timeout=.",
    )
    MCP_ENDLESS_LISTING = (
        "mcp_endless_listing",
        "The MCP server's tool list did not end: too many pages, or a cursor it had sent before. A run goes on without its tools; fix the server.",
    )
    MCP_BAD_SCHEMA = (
        "mcp_bad_schema",
        "An MCP tool's input schema cannot be used (no type object, a $ref that is missing or refers to itself, or too large once expanded); the message names the server and tool. A run goes on without that tool (without all the server's tools when the SDK refuses its listing); fix the schema.",
    )
    NOT_FOUND = (
        "not_found",
        "mcp serve: the file, module or attribute named does not exist. Fix the target.",
    )
    INVALID_TARGET = (
        "invalid_target",
        "mcp serve: the target is not a tool, toolset, agent or list of them. Point at one.",
    )
    NO_TOOLS = (
        "no_tools",
        "mcp serve: the target has no tools to serve. Decorate functions with @tool, or build FunctionTools.",
    )
    INVALID_TOOLS = (
        "invalid_tools",
        "The console's --tools names a module or file that cannot be loaded, or one without tools. Fix the --tools argument.",
    )

    # The code executor (PythonCodeExecutor)
    UNSUPPORTED_PLATFORM = (
        "unsupported_platform",
        "PythonCodeExecutor runs on Linux only (its guard and memory limit need Linux). Run it on Linux.",
    )
    INVALID_WORKDIR = (
        "invalid_workdir",
        "PythonCodeExecutor cannot create or write its working folder. Pass workdir= naming a folder you can write.",
    )
    INVALID_LIMIT = (
        "invalid_limit",
        "A PythonCodeExecutor limit (timeout, memory_limit, max_output) is not a positive number. Pass a whole number above 0.",
    )
    INVALID_SANDBOX = (
        "invalid_sandbox",
        'PythonCodeExecutor\'s sandbox= is not "auto", "bwrap" or "guard". Pass one of those.',
    )
    SANDBOX_UNAVAILABLE = (
        "sandbox_unavailable",
        'PythonCodeExecutor(sandbox="bwrap") on a machine where bubblewrap cannot run (the message says why). '
        'Install bubblewrap, or pass sandbox="guard" (the audit hook alone).',
    )

    # Evaluation
    INVALID_EVAL_SET = (
        "invalid_eval_set",
        "An eval set file is empty, not JSON, or not in google-adk's .test.json or .evalset.json shape "
        "(the message names the file, the case and the field, one line per problem). Fix the file.",
    )
    INVALID_CRITERIA = (
        "invalid_criteria",
        "A criterion (test_config.json or evaluate's criteria) names an unknown metric, has a threshold that is "
        "not a number from 0 to 1, or an option of the wrong kind (match_type, num_samples); the message names "
        "the file and the field. Fix the value, use a metric the message lists, or pass metrics={name: fn}.",
    )
    MISSING_THRESHOLD = (
        "missing_threshold",
        "A custom metric was passed without a threshold in criteria. Add criteria={name: threshold}.",
    )
    WORKER_FAILED = (
        "worker_failed",
        "The worker that ran an eval case died (a Ray worker or its node). The case is marked error; the others go on.",
    )
    INVALID_CONCURRENCY = (
        "invalid_concurrency",
        "max_concurrency is below 1. Pass a whole number of at least 1.",
    )
    AGENT_NOT_FACTORY = (
        "agent_not_factory",
        'executor="ray" needs a factory that builds the agent on the worker, not an agent object. Pass a zero-argument function returning the agent.',
    )
    UNKNOWN_EXECUTOR = (
        "unknown_executor",
        'executor= is neither "local" nor "ray". Pass one of them.',
    )
    NOT_AN_AGENT = (
        "not_an_agent",
        "The factory given to evaluate or run_batch returned something that is not an Agent. Return the agent from it.",
    )

    # Sessions beyond one kernel (leases, PostgreSQL, ADK_SESSIONS)
    SESSION_LEASE_LOST = (
        "session_lease_lost",
        "A run was paused past its session lease and another run took the session over; this run stops instead of writing into it. Run the message again.",
    )
    SESSION_DB_UNREACHABLE = (
        "session_db_unreachable",
        "The PostgreSQL server named by the DSN cannot be reached or refused the login. Check the DSN (host, port, user, password) and that the server is up.",
    )
    SESSION_URL_INVALID = (
        "session_url_invalid",
        "ADK_SESSIONS or --sessions is not memory, sqlite:///PATH or postgresql://... Fix the URL.",
    )
