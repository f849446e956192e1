{{/* Names, labels and shared pod fragments of the gpusched chart. */}}

{{- define "gpusched.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpusched.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gpusched.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "gpusched.labels" -}}
helm.sh/chart: {{ include "gpusched.chart" . }}
app.kubernetes.io/name: {{ include "gpusched.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpusched
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component: include "gpusched.selectorLabels" (list . "scheduler") */}}
{{- define "gpusched.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "gpusched.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "gpusched.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gpusched.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "gpusched.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* A writable /tmp (the root filesystem is read-only). */}}
{{- define "gpusched.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 16Mi
{{- end -}}

{{- define "gpusched.validate" -}}
{{- $m := .Values.monitoring -}}
{{- if and (or $m.service.enabled $m.serviceMonitor.enabled $m.prometheusRule.enabled) (not .Values.httpServer.enabled) -}}
{{- fail "monitoring.* needs httpServer.enabled=true (the /metrics server)" -}}
{{- end -}}
{{- if and (gt (int .Values.scheduler.replicas) 1) (not .Values.scheduler.leaderElect) -}}
{{- fail "scheduler.replicas > 1 needs scheduler.leaderElect=true (two schedulers would bind the same GPUs)" -}}
{{- end -}}
{{- if and .Values.deletionCost.enabled (gt (int .Values.deletionCost.replicas) 1) -}}
{{- fail "deletionCost.replicas must be 1: the deletion-cost controller has no leader election" -}}
{{- end -}}
{{- if and .Values.extender.enabled (not .Values.extender.clientCASecretName) -}}
{{- fail "extender.clientCASecretName is required: the extender answers only clients with a certificate from that CA (kube-scheduler's extender tlsConfig)" -}}
{{- end -}}
{{- if not (has .Values.scheduler.podAntiAffinity (list "soft" "hard" "none")) -}}
{{- fail "scheduler.podAntiAffinity must be soft, hard or none" -}}
{{- end -}}
{{- end -}}

{{/* Labels of a component's pods: the selector labels and the version (no helm.sh/chart, so a
chart upgrade alone does not roll the pods). include "gpusched.podLabels" (list . "scheduler") */}}
{{- define "gpusched.podLabels" -}}
{{- $root := index . 0 -}}
{{ include "gpusched.selectorLabels" . }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gpusched
{{- with $root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The KubeSchedulerConfiguration text: include "gpusched.schedulerConfig" (list . LEADER-ELECT) */}}
{{- define "gpusched.schedulerConfig" -}}
{{- $root := index . 0 -}}
{{- $leaderElect := index . 1 -}}
{{- with $root -}}
{{- $c := .Values.schedulerConfig -}}
# gpusched's KubeSchedulerConfiguration (rendered from the chart's schedulerConfig values).
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: {{ int $c.parallelism }}
percentageOfNodesToScore: {{ int $c.percentageOfNodesToScore }}
podInitialBackoffSeconds: {{ int $c.podInitialBackoffSeconds }}
podMaxBackoffSeconds: {{ int $c.podMaxBackoffSeconds }}
clientConnection:
  kubeconfig: ""
  contentType: application/json
  qps: {{ $c.qps }}
  burst: {{ int $c.burst }}
leaderElection:
  leaderElect: {{ $leaderElect }}
  {{- if $leaderElect }}
  leaseDuration: {{ $c.leaseDuration }}
  renewDeadline: {{ $c.renewDeadline }}
  retryPeriod: {{ $c.retryPeriod }}
  resourceLock: leases
  resourceName: {{ $c.leaseName }}
  resourceNamespace: {{ .Release.Namespace }}
  {{- end }}
profiles:
{{- range $c.profiles }}
  - schedulerName: {{ required "every profile needs a schedulerName" .schedulerName }}
    {{- with (omit . "schedulerName") }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}
extenders:
  {{- if $c.extenders }}
  {{- toYaml $c.extenders | nindent 2 }}
  {{- else }} []
  {{- end }}
{{- end -}}
{{- end -}}
