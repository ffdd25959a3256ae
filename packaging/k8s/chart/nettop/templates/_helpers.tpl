{{- define "nettop.name" -}}nettop{{- end -}}

{{- define "nettop.fullname" -}}
{{- if eq .Release.Name "nettop" -}}nettop{{- else -}}{{ printf "%s-nettop" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "nettop.selectorLabels" -}}
app.kubernetes.io/name: nettop
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nettop.labels" -}}
{{ include "nettop.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* "auto" renders a Prometheus Operator object only where the API is served. */}}
{{- define "nettop.monitoring" -}}
{{- $v := toString .enabled -}}
{{- if or (eq $v "true") (and (eq $v "auto") (.root.Capabilities.APIVersions.Has "monitoring.coreos.com/v1")) -}}true{{- end -}}
{{- end -}}
