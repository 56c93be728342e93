{{/* The chart's name. */}}
{{- define "gcscope.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's objects: the release name when it already says gcscope. */}}
{{- define "gcscope.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gcscope.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gcscope.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gcscope.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gcscope.labels" -}}
helm.sh/chart: {{ include "gcscope.chart" . }}
{{ include "gcscope.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "gcscope.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gcscope.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gcscope.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "gcscope.fullname" .)) .Values.tls.secretName }}
{{- end }}

{{/* The engine's mode, checked. */}}
{{- define "gcscope.gcMode" -}}
{{- $mode := .Values.gc.mode | toString }}
{{- if not (has $mode (list "shadow" "active")) }}
{{- fail (printf "gc.mode %q: want shadow or active" $mode) }}
{{- end }}
{{- $mode }}
{{- end }}

{{/* The Host names of the Service, for --allowed-hosts. */}}
{{- define "gcscope.serviceHosts" -}}
{{- $svc := include "gcscope.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- $hosts := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain) }}
{{- concat $hosts .Values.allowedHosts | join "," }}
{{- end }}

{{/* The claim that holds the recording (history.persistence). */}}
{{- define "gcscope.historyClaimName" -}}
{{- default (printf "%s-history" (include "gcscope.fullname" .)) .Values.history.persistence.existingClaim }}
{{- end }}
