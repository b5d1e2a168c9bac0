"""The environment variables that choose or configure a provider: tests clear them all, so what
`auto` picks and which keys are set depend only on what a test sets. Kept here, apart from the
package's own lists, so a variable the package forgets still gets cleared and noticed."""

PROVIDER_VARIABLES = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "OLLAMA_HOST",
    "DEEPSEEK_API_KEY",
    "GROQ_API_KEY",
    "OPENROUTER_API_KEY",
)
