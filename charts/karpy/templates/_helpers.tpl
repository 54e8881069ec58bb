{{- define "karpy.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "karpy.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "karpy.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "karpy.serviceAccountName" -}}
{{- default (include "karpy.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The webapp's own ServiceAccount: read-only, plus its certificate Secret and webhook caBundles. */}}
{{- define "karpy.webappServiceAccountName" -}}
{{- printf "%s-webapp" (include "karpy.fullname" .) -}}
{{- end -}}

{{/* The Secret holding the webhook CA and serving certificate, filled by the webapp itself. */}}
{{- define "karpy.certSecretName" -}}
{{- printf "%s-webhook-cert" (include "karpy.fullname" .) -}}
{{- end -}}

{{- define "karpy.leaseName" -}}
{{- printf "%s-controller" (include "karpy.fullname" .) -}}
{{- end -}}

{{- define "karpy.savingsName" -}}
{{- printf "%s-savings" (include "karpy.fullname" .) -}}
{{- end -}}

{{/* topologySpreadConstraints with the component's label selector; call with (list $ "controller"). */}}
{{- define "karpy.topologySpread" -}}
{{- $root := index . 0 -}}{{- $component := index . 1 -}}
{{- range $root.Values.topologySpreadConstraints }}
- {{- toYaml . | nindent 2 }}
  labelSelector:
    matchLabels:
      app.kubernetes.io/instance: {{ $root.Release.Name }}
      app.kubernetes.io/component: {{ $component }}
{{- end }}
{{- end -}}

{{- define "karpy.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{- define "karpy.podCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
priorityClassName: {{ .Values.priorityClassName }}
securityContext: {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The simulated cloud's SQLite store on a claim shared by the controller replicas. */}}
{{- define "karpy.simulatedPersistence" -}}
{{- if and (eq .Values.controller.cloudProvider "simulated") .Values.controller.simulatedState.persistence -}}true{{- end -}}
{{- end -}}
