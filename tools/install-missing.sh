# Sourced (`. tools/install-missing.sh`, from the repository's root) by the
# scripts that install what they need when it is missing: Debian's packages,
# through apt-get, the one place that knows how.
#   need COMMAND PACKAGE  PACKAGE is needed unless COMMAND is on PATH
#   need_package PACKAGE  PACKAGE is needed (the caller checked for it)
#   install_needed        installs what is needed (apt-get update first, as
#                         on a clean machine; sudo unless root); nothing when
#                         nothing is; non-zero, with a warning, if it could not
# shellcheck shell=sh

needed=""

need_package() {
  case " $needed " in
    *" $1 "*) ;;
    *) needed="$needed $1" ;;
  esac
}

need() {
  command -v "$1" >/dev/null 2>&1 || need_package "$2"
}

install_needed() {
  [ -n "$needed" ] || return 0
  echo "installing:$needed"
  install_sudo=""
  [ "$(id -u)" -eq 0 ] || install_sudo=sudo
  # $needed is a list of package names: split on purpose.
  # shellcheck disable=SC2086
  if $install_sudo apt-get update && $install_sudo apt-get install -y --no-install-recommends $needed; then
    needed=""
    return 0
  fi
  echo "warning: could not install$needed" >&2
  return 1
}
