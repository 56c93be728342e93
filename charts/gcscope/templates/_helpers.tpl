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

{{/* monitoring.serviceMonitor.token, checked: whose token a scrape bears. */}}
{{- define "gcscope.metricsToken" -}}
{{- $token := .Values.monitoring.serviceMonitor.token | toString }}
{{- if not (has $token (list "chart" "prometheus")) }}
{{- fail (printf "monitoring.serviceMonitor.token %q: want chart or prometheus" $token) }}
{{- end }}
{{- $token }}
{{- end }}

{{/* The ServiceAccount whose token scrapes /metrics (monitoring.serviceMonitor.token=chart). */}}
{{- define "gcscope.metricsServiceAccountName" -}}
{{- printf "%s-metrics" (include "gcscope.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* A duration of one unit (90s, 30m, 2h, 1d) in seconds, for a PromQL comparison. */}}
{{- define "gcscope.seconds" -}}
{{- $d := toString . }}
{{- if not (regexMatch "^[0-9]+[smhd]$" $d) }}
{{- fail (printf "%q: want a whole number and one unit, s, m, h or d (30m)" $d) }}
{{- end }}
{{- $n := regexFind "^[0-9]+" $d | atoi }}
{{- $unit := get (dict "s" 1 "m" 60 "h" 3600 "d" 86400) (regexFind "[smhd]$" $d) }}
{{- mul $n $unit }}
{{- end }}

{{/* "true" when the release is a hub over remote gcscopes (hub.remotes), "" otherwise. */}}
{{- define "gcscope.hub" -}}
{{- if .Values.hub.remotes }}true{{ end }}
{{- end }}

{{/* The --remote flag of each of hub.remotes, checked; with its CA mounted at
     /etc/gcscope/remotes/INDEX/ca.crt (the volumes are the Deployment's). */}}
{{- define "gcscope.remoteArgs" -}}
{{- $seen := dict }}
{{- range $i, $r := .Values.hub.remotes }}
{{- if hasKey $seen $r.name }}
{{- fail (printf "hub.remotes: %q is given twice" $r.name) }}
{{- end }}
{{- $_ := set $seen $r.name true }}
{{- $cas := 0 }}
{{- if $r.caSecret }}{{ $cas = add1 $cas }}{{ end }}
{{- if $r.caConfigMap }}{{ $cas = add1 $cas }}{{ end }}
{{- if $r.ca }}{{ $cas = add1 $cas }}{{ end }}
{{- if gt $cas 1 }}
{{- fail (printf "hub.remotes %q: give one of caSecret, caConfigMap and ca" $r.name) }}
{{- end }}
{{- $spec := printf "%s=%s" $r.name (trimSuffix "/" $r.url) }}
{{- if gt $cas 0 }}
{{- $spec = printf "%s,ca=/etc/gcscope/remotes/%d/ca.crt" $spec $i }}
{{- end }}
{{- with $r.forward }}
{{- $spec = printf "%s,forward=%s" $spec . }}
{{- end }}
{{ printf "- %s" (printf "--remote=%s" $spec | quote) }}
{{- end }}
{{- end }}

{{/* The ConfigMap holding the PEM of the remotes given as hub.remotes[].ca. */}}
{{- define "gcscope.hubCAConfigMapName" -}}
{{- printf "%s-remote-cas" (include "gcscope.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "true" when a hub signs users in through single sign-on (hub.singleSignOn.issuerURL),
     "" otherwise; checks how a hub authenticates: a token file (hub.authTokenSecret) or
     the remotes deciding (--auth=kubernetes), with single sign-on or without, not both. */}}
{{- define "gcscope.hubSSO" -}}
{{- if include "gcscope.hub" . }}
{{- $sso := .Values.hub.singleSignOn | default dict }}
{{- if $sso.issuerURL }}
{{- if .Values.hub.authTokenSecret.name }}
{{- fail "hub.authTokenSecret.name and hub.singleSignOn.issuerURL are two ways to authenticate: pick one (a token file the hub checks, or single sign-on with the remotes deciding who a user is)" }}
{{- end }}
{{- if not (hasPrefix "https://" $sso.issuerURL) }}
{{- fail (printf "hub.singleSignOn.issuerURL %q: an OpenID issuer is an https URL" $sso.issuerURL) }}
{{- end }}
{{- $_ := required "hub.singleSignOn.clientID is required with issuerURL: the hub's client ID at the OpenID provider (the audience the remotes' apiservers expect)" $sso.clientID }}
{{- if and ($sso.caSecret | default dict).name ($sso.caConfigMap | default dict).name }}
{{- fail "hub.singleSignOn: give one of caSecret and caConfigMap" }}
{{- end }}
{{- true }}
{{- else }}
{{- range $k := list "clientID" "displayName" }}
{{- if get $sso $k }}
{{- fail (printf "hub.singleSignOn.%s goes with hub.singleSignOn.issuerURL, which is not given" $k) }}
{{- end }}
{{- end }}
{{- range $k := list "clientSecret" "caSecret" "caConfigMap" }}
{{- if (get $sso $k | default dict).name }}
{{- fail (printf "hub.singleSignOn.%s goes with hub.singleSignOn.issuerURL, which is not given" $k) }}
{{- end }}
{{- end }}
{{- if not (kindIs "invalid" $sso.scopes) }}
{{- fail "hub.singleSignOn.scopes goes with hub.singleSignOn.issuerURL, which is not given" }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
