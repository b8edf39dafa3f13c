"""Who asks, in which format: the shared parts (common), the web page (web), the OpenAI-compatible
API (openai_api), MCP (mcp_server)."""
