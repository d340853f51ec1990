{{/* The admin's config, mounts and volumes: shared by its Deployment and the migration Job. */}}
{{- define "ndd.adminConfig" -}}
{{- $a := .Values.admin -}}
{{- $cfg := dict "bootstrap" (include "ndd.bootstrap" .) "pg_file" "/etc/ndd/pg/conninfo"
      "db-schema" .Values.postgresql.schema "config-topic" .Values.topics.configTopic
      "events-topic" .Values.topics.eventsTopic
      "config-replication" .Values.topics.replicationFactor
      "http" (dict "listen" "0.0.0.0" "port" $a.port)
      "log" (dict "level" .Values.logLevel "json" true)
      "kafka" (include "ndd.kafkaProps" . | fromJson) -}}
{{- if $a.tls.enabled -}}
{{- $_ := set $cfg "tls-cert" "/etc/ndd/admin-tls/tls.crt" -}}
{{- $_ := set $cfg "tls-key" "/etc/ndd/admin-tls/tls.key" -}}
{{- if $a.tls.clientAuth -}}
{{- $_ := set $cfg "tls-ca" "/etc/ndd/admin-tls/ca.crt" -}}
{{- $_ := set $cfg "tls-client-auth" true -}}
{{- end -}}
{{- end -}}
{{- toJson (mergeOverwrite $cfg (deepCopy $a.settings)) -}}
{{- end -}}

{{- define "ndd.pgSecretName" -}}
{{- if .Values.devPostgresql.enabled -}}
{{ printf "%s-postgresql" (include "ndd.fullname" .) }}
{{- else -}}
{{ .Values.postgresql.secretName }}
{{- end -}}
{{- end -}}

{{- define "ndd.adminMounts" -}}
- {name: config, mountPath: /etc/ndd/config, readOnly: true}
{{ include "ndd.adminSecretMounts" . }}
{{- end -}}

{{- define "ndd.adminSecretMounts" -}}
- {name: pg, mountPath: /etc/ndd/pg, readOnly: true}
{{- if .Values.admin.tls.enabled }}
- {name: admin-tls, mountPath: /etc/ndd/admin-tls, readOnly: true}
{{- end }}
{{ include "ndd.kafkaMounts" . }}
{{- end -}}

{{- define "ndd.adminVolumes" -}}
- name: config
  configMap:
    name: {{ printf "%s-admin" (include "ndd.fullname" .) }}
{{ include "ndd.adminSecretVolumes" . }}
{{- end -}}

{{/* The Secrets the admin reads: conninfo, its TLS, Kafka's TLS/SASL (and /tmp). */}}
{{- define "ndd.adminSecretVolumes" -}}
- name: pg
  secret:
    secretName: {{ include "ndd.pgSecretName" . }}
    defaultMode: 0440
    items:
      - {key: {{ ternary "conninfo" .Values.postgresql.conninfoKey .Values.devPostgresql.enabled }}, path: conninfo}
{{- if .Values.admin.tls.enabled }}
- name: admin-tls
  secret:
    secretName: {{ required "admin.tls.secretName is required with admin.tls.enabled" .Values.admin.tls.secretName }}
    defaultMode: 0440
{{- end }}
{{ include "ndd.kafkaVolumes" . }}
{{- end -}}
