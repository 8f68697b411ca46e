# Sourced by scripts/quickstart.sh and scripts/check_hardening.sh: installs those of the Debian
# packages given that are not installed yet (one apt-get update, then one install).
install_missing_debian_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  printf '==> installing Debian packages: %s\n' "${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
}
