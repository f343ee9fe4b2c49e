"""Local fakes of the outside world (an OpenAI-compatible LLM server, …) for tests and benchmarks."""
