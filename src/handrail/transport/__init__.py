"""The ways in: stdio, Streamable HTTP and its security. Each turns bytes into
requests for the protocol layer and writes its answers back."""
