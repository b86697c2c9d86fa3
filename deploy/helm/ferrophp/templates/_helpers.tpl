{{/* Names and labels shared by the chart's objects. */}}
{{- define "ferrophp.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The server's pods; the chart's Redis is told apart by its component. */}}
{{- define "ferrophp.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "ferrophp.redisSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: sessions
{{- end -}}

{{- define "ferrophp.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* phpredis' save_path: sessions.redisUrl, else the chart's own Redis Service. */}}
{{- define "ferrophp.redisUrl" -}}
{{- if .Values.sessions.redisUrl -}}
{{- .Values.sessions.redisUrl -}}
{{- else -}}
{{- printf "tcp://%s-redis:6379" (include "ferrophp.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* FERROPHP_INI: space-separated key=value pairs, each passed as -d by the image's
     entrypoint; the session settings first, then .Values.ini. */}}
{{- define "ferrophp.ini" -}}
{{- $s := .Values.sessions -}}
{{- $pairs := list -}}
{{- if eq $s.store "redis" -}}
{{- $pairs = append $pairs "extension=igbinary" -}}
{{- $pairs = append $pairs "extension=redis" -}}
{{- $pairs = append $pairs "session.save_handler=redis" -}}
{{- $pairs = append $pairs (printf "session.save_path=\"%s?timeout=%v&read_timeout=%v\"" (include "ferrophp.redisUrl" .) $s.timeoutSeconds $s.timeoutSeconds) -}}
{{- $pairs = append $pairs "redis.session.locking_enabled=1" -}}
{{- $pairs = append $pairs (printf "redis.session.lock_expire=%v" $s.lockExpireSeconds) -}}
{{- $pairs = append $pairs (printf "redis.session.lock_wait_time=%v" $s.lockWaitMicros) -}}
{{- $pairs = append $pairs (printf "redis.session.lock_retries=%v" $s.lockRetries) -}}
{{- else if eq $s.store "files" -}}
{{- $pairs = append $pairs "session.save_path=/app/var/sessions" -}}
{{- else -}}
{{- fail (printf "sessions.store must be redis or files, not %q" $s.store) -}}
{{- end -}}
{{- range $k, $v := .Values.ini -}}
{{- $pairs = append $pairs (printf "%s=%v" $k $v) -}}
{{- end -}}
{{- join " " $pairs -}}
{{- end -}}
