{{- define "threadengine.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "threadengine.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "threadengine.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "threadengine.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "threadengine.selectorLabels" -}}
app.kubernetes.io/name: {{ include "threadengine.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "threadengine.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "threadengine.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "threadengine.secretName" -}}
{{- default (include "threadengine.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{- define "threadengine.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The engine's environment, shared by the pods and the migration Job. */}}
{{- define "threadengine.env" -}}
- name: THREADENGINE_DATABASE__URL
  valueFrom:
    secretKeyRef:
      name: {{ include "threadengine.secretName" . }}
      key: database-url
- name: THREADENGINE_SECURITY__HASH_CHAIN_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ include "threadengine.secretName" . }}
      key: hash-chain-secret
- name: THREADENGINE_METRICS__TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "threadengine.secretName" . }}
      key: metrics-token
      optional: true
- name: THREADENGINE_REGISTRY__CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ include "threadengine.secretName" . }}
      key: registry-client-secret
      optional: true
- name: THREADENGINE_REGISTRY__LICENSE_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "threadengine.secretName" . }}
      key: registry-license-key
      optional: true
- name: THREADENGINE_SERVER__LISTEN
  value: "0.0.0.0:{{ .Values.service.port }}"
{{- with .Values.config.publicURL }}
- name: THREADENGINE_SERVER__PUBLIC_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.config.trustedProxies }}
- name: THREADENGINE_SERVER__TRUSTED_PROXIES
  value: {{ . | quote }}
{{- end }}
- name: THREADENGINE_DATABASE__MAX_CONNS
  value: {{ .Values.config.databaseMaxConns | quote }}
- name: THREADENGINE_LOG__FORMAT
  value: {{ .Values.config.logFormat | quote }}
- name: THREADENGINE_LOG__LEVEL
  value: {{ .Values.config.logLevel | quote }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}
