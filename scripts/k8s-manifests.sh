#!/usr/bin/env bash
# Regenerates what packaging/k8s/ derives from other files, so that none
# of it can drift (tests/pure/k8s_manifests.rs fails when a copy differs):
#
# - the chart's files/: the Prometheus rules and the Grafana dashboard
#   from fleet/, which the chart's PrometheusRule and ConfigMap embed;
# - packaging/k8s/nettop.yaml: the chart rendered with its defaults in
#   namespace nettop, for `kubectl apply -f` without helm (the Namespace
#   with its Pod Security labels included);
# - packaging/k8s/nettop-monitoring.yaml: its PodMonitor and
#   PrometheusRule, for clusters with the Prometheus Operator.
#
# Needs helm (scripts/deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
helm=${HELM:-$(command -v helm || echo "$HOME/go/bin/helm")}
chart=packaging/k8s/chart/nettop
cp fleet/prometheus/nettop.rules.yml fleet/grafana/nettop.json "$chart/files/"
render() {
    "$helm" template nettop "$chart" --namespace nettop --kube-version 1.33.0 "$@"
}
{
    echo "# nettop's DaemonSet: helm template of packaging/k8s/chart/nettop with its"
    echo "# defaults (scripts/k8s-manifests.sh). kubectl apply -f this file."
    render --set createNamespace=true --set podMonitor.enabled=false \
        --set prometheusRule.enabled=false
} >packaging/k8s/nettop.yaml
{
    echo "# The Prometheus Operator's objects for nettop: helm template of"
    echo "# packaging/k8s/chart/nettop (scripts/k8s-manifests.sh)."
    render --set podMonitor.enabled=true --set prometheusRule.enabled=true \
        --show-only templates/podmonitor.yaml --show-only templates/prometheusrule.yaml
} >packaging/k8s/nettop-monitoring.yaml
echo packaging/k8s/nettop.yaml packaging/k8s/nettop-monitoring.yaml
