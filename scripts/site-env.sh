# Sourced by quickstart.sh and test.sh: site settings for builds on this host.
# A host that trusts extra CAs (/usr/local/share/ca-certificates) sits behind TLS
# interception; the images do not carry that CA, so pip inside builds must be told to
# trust the index hosts (see build_graph/settings.py). Set BUILD_GRAPH_PIP_* yourself to override.
if [ -z "${BUILD_GRAPH_PIP_TRUSTED_HOST+x}" ] && compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  export BUILD_GRAPH_PIP_TRUSTED_HOST="pypi.org files.pythonhosted.org"
  echo "site: this host trusts extra CAs; builds trust $BUILD_GRAPH_PIP_TRUSTED_HOST" >&2
fi
