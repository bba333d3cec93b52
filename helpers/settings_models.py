"""The settings of the models (chat, utility, embeddings, the built-in one), memory, web
search and Agent 0's profile: the first part of the `Settings` schema
(helpers/settings_about.py says how the parts chain)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from helpers.fallback_entries import FallbackEntry
from helpers.model_presets import ModelPreset, check_unique
from helpers.settings_about import about

#: What a fallback list says in the form (one text for the three roles).
FALLBACKS_HINT = 'Tried in turn when it fails for good: [{"model", "api_base", "api_key"}, ...].'


class ProviderLimit(BaseModel):
    """How much one provider may be asked, shared by every chat of this process."""

    model_config = ConfigDict(extra="forbid")

    #: Requests per `window` (0: no limit).
    rpm: int = Field(0, ge=0)
    #: Tokens (prompt and reply) per `window` (0: no limit).
    tpm: int = Field(0, ge=0)
    #: Seconds the counts are over: a minute, unless a provider counts otherwise.
    window: float = Field(60.0, gt=0, le=86_400)


class ModelFields(BaseModel):
    """The settings' first fields (helpers/settings.py `Settings` is all of them)."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    # Chat model: the one that runs the agents' loops. The default is the small
    # embedded model, so Cadre works with no provider; onboarding sets a real one.
    chat_model: str = Field(
        "local/qwen2.5-coder-1.5b",
        **about("Model", "The model that runs the agents, as provider/name "
                "(e.g. openai/gpt-4.1-mini) or local/<name>.", "Model"),
    )  # fmt: skip
    chat_api_base: str = Field(
        "", **about("API address", "The provider's URL; empty: its usual one.", "Model")
    )
    chat_api_key: str = Field(
        "", **about("API key", "The key the provider gave you.", "Model", secret=True)
    )
    chat_ctx_length: int = Field(
        128_000, gt=0,
        **about("Context window", "How much text the model reads at once.", "Model", "tokens"),
    )  # fmt: skip
    chat_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        **about("Extra parameters", 'Sent with every call, as a JSON object, '
                'e.g. {"temperature": 0.2}.', "Model", "JSON"),
    )  # fmt: skip
    chat_fallbacks: list[FallbackEntry] = Field(
        default_factory=list,
        **about("Fallback models", FALLBACKS_HINT, "Model", "JSON", kind="json_list"),
    )  # fmt: skip

    # Utility model: summaries, chat names, memory work.
    util_model: str = Field(
        "local/qwen2.5-coder-1.5b",
        **about("Model", "A cheaper model for chat names, summaries and memory work.",
                "Utility model"),
    )  # fmt: skip
    util_api_base: str = Field(
        "", **about("API address", "The provider's URL; empty: its usual one.", "Utility model")
    )
    util_api_key: str = Field(
        "", **about("API key", "The key the provider gave you.", "Utility model", secret=True)
    )
    util_ctx_length: int = Field(
        128_000, gt=0,
        **about("Context window", "How much text the model reads at once.", "Utility model",
                "tokens"),
    )  # fmt: skip
    util_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        **about("Extra parameters", "Sent with every call, as a JSON object.", "Utility model",
                "JSON"),
    )  # fmt: skip
    util_fallbacks: list[FallbackEntry] = Field(
        default_factory=list,
        **about("Fallback models", FALLBACKS_HINT, "Utility model", "JSON", kind="json_list"),
    )  # fmt: skip

    # Embedding model: memory and knowledge search.
    embed_model: str = Field(
        "openai/text-embedding-3-small",
        **about("Model", "Turns text into vectors so memories are found by meaning; "
                "without one, by keywords only.", "Embeddings"),
    )  # fmt: skip
    embed_api_base: str = Field(
        "", **about("API address", "The provider's URL; empty: its usual one.", "Embeddings")
    )
    embed_api_key: str = Field(
        "", **about("API key", "The key the provider gave you.", "Embeddings", secret=True)
    )
    embed_ctx_length: int = Field(
        8_192, gt=0,
        **about("Longest input", "The most text embedded in one piece.", "Embeddings", "tokens"),
    )  # fmt: skip
    embed_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        **about("Extra parameters", "Sent with every call, as a JSON object.", "Embeddings",
                "JSON"),
    )  # fmt: skip
    embed_fallbacks: list[FallbackEntry] = Field(
        default_factory=list,
        **about("Fallback models", FALLBACKS_HINT, "Embeddings", "JSON", kind="json_list"),
    )  # fmt: skip

    # Fallbacks and provider limits (issue 37; models/fallback.py, models/rate_limits.py).
    #: Seconds a model that failed for good is passed over for its fallbacks.
    fallback_cooldown: float = Field(
        300.0, ge=0, le=86_400,
        **about("Pass over a failed model for", "A model that failed for good is skipped for "
                "its fallbacks this long, then tried again.", "Model", "s"),
    )  # fmt: skip
    #: Provider prefix (as in model names: "openai", "anthropic") -> its limits.
    provider_limits: dict[str, ProviderLimit] = Field(
        default_factory=dict,
        **about("Provider limits", 'Calls over them wait. E.g. {"openai": {"rpm": 60, "tpm": '
                '100000}}: requests and tokens a minute.', "Limits and timeouts", "JSON"),
    )  # fmt: skip

    #: Local (`local/<name>`) models: the GGUF file (empty: the built-in Qwen2.5-Coder 1.5B),
    #: its context length and CPU threads (0: all).
    local_model_path: str = Field(
        "", **about("Model file", "A model file on this computer for local/<name> models (a "
                    ".gguf file, as llama.cpp runs); empty: the built-in one.",
                    "Local model"),
    )  # fmt: skip
    local_ctx_length: int = Field(
        8_192, ge=512,
        **about("Context window", "How much text a local model reads at once.", "Local model",
                "tokens"),
    )  # fmt: skip
    local_threads: int = Field(
        0, ge=0,
        **about("CPU threads", "Cores a local model may use; 0: all of them.", "Local model",
                "threads"),
    )  # fmt: skip
    #: Hold replies to the reply schema: local models always; remote ones when "on",
    #: or "auto" where litellm says the model supports a response schema.
    structured_output: Literal["auto", "on", "off"] = Field(
        "auto",
        **about("Keep replies to the agents' format", "Holds each reply to the agents' reply "
                "form, so fewer are unusable (structured output; local models always are).",
                "Model",
                options={"auto": "Auto: where the model supports it", "on": "On", "off": "Off"}),
    )  # fmt: skip

    #: The memory area chats use when they belong to no project.
    memory_area: str = Field(
        "default",
        **about("Memory area", "Where chats outside a project keep their memories.", "Memory"),
    )  # fmt: skip
    #: Before an agent starts on a message, put the most relevant memories (and
    #: knowledge) into its prompt, up to this many tokens (0: off).
    memory_recall_tokens: int = Field(
        600, ge=0,
        **about("Recalled memories", "Relevant memories put before each task, at most this "
                "much; 0: none.", "Memory", "tokens"),
    )  # fmt: skip
    #: After each run, ask the utility model whether the work solved something worth
    #: remembering, and save it to the `solutions` memories.
    memory_memorize: bool = Field(
        False,
        **about("Remember solutions", "After each run, the utility model writes down a "
                "reusable solution.", "Memory"),
    )  # fmt: skip
    #: A SearXNG instance for the search_engine tool (empty: none).
    searxng_url: str = Field(
        "", **about("SearXNG address", "A SearXNG server for web search; empty: no web search.",
                    "Web search"),
    )  # fmt: skip

    #: Agent 0's profile (a folder name under agents/ or usr/agents/).
    agent_profile: str = Field(
        "agent0",
        **about("Agent 0's profile", "The role and prompts of the agent you talk to.", "Agents",
                kind="profile"),
    )  # fmt: skip

    # -- model presets (issue 37): named sets of model settings a chat may choose --
    #: "Fast", "Strong", "Local"...: each chat's header offers them (helpers/model_presets.py
    #: says what a preset leaves to the settings above); the API takes one by name.
    model_presets: list[ModelPreset] = Field(
        default_factory=list,
        **about("Model presets", "Named sets of models (e.g. Fast, Strong) a chat can "
                "switch to from its header, for that chat only.", "Model",
                kind="model_presets"),
    )  # fmt: skip

    # -- voice (issue 40, models/voice.py): speech to text and text to speech --
    #: The provider's OpenAI-compatible /audio/transcriptions model (empty: the built-in
    #: model where it runs, models/speech_builtin.py; else no microphone).
    stt_model: str = Field(
        "",
        **about("Speech-to-text model", "Writes down what you say: provider/name (e.g. "
                "openai/whisper-1); empty: built in (English); off: no microphone.", "Voice"),
    )  # fmt: skip
    stt_api_base: str = Field(
        "", **about("Speech-to-text address", "The provider's URL; empty: its usual one.",
                    "Voice"),
    )  # fmt: skip
    stt_api_key: str = Field(
        "", **about("Speech-to-text key", "The key the provider gave you.", "Voice",
                    secret=True),
    )  # fmt: skip
    #: The provider's /audio/speech model (empty: the browser's own voice reads answers).
    tts_model: str = Field(
        "",
        **about("Text-to-speech model", "Reads answers aloud, as provider/name (e.g. "
                "openai/gpt-4o-mini-tts); empty: the browser's own voice.", "Voice"),
    )  # fmt: skip
    tts_api_base: str = Field(
        "", **about("Text-to-speech address", "The provider's URL; empty: its usual one.",
                    "Voice"),
    )  # fmt: skip
    tts_api_key: str = Field(
        "", **about("Text-to-speech key", "The key the provider gave you.", "Voice",
                    secret=True),
    )  # fmt: skip
    tts_voice: str = Field(
        "alloy", max_length=100,
        **about("Voice", "The provider's voice that reads answers (e.g. alloy, nova).",
                "Voice"),
    )  # fmt: skip
    voice_send_at_once: bool = Field(
        False,
        **about("Send speech at once", "What you say is sent as soon as it is written "
                "down; off: it waits in the message box for you to check.", "Voice"),
    )  # fmt: skip
    voice_read_aloud: bool = Field(
        False,
        **about("Read answers aloud", "Each answer of Agent 0 is read aloud when it "
                "arrives.", "Voice"),
    )  # fmt: skip

    @field_validator("model_presets")
    @classmethod
    def _unique_presets(cls, presets: list[ModelPreset]) -> list[ModelPreset]:
        return check_unique(presets)
